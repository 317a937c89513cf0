import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";

// `.openapi()` metadata on every schema: the schemas that validate also document.
extendZodWithOpenApi(z);

export { z };
