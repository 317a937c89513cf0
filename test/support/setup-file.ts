// Runs before each test file, in the worker that runs it (vitest `setupFiles`; with isolate off a
// worker runs several files one after another, and this runs again before each).
import { afterAll } from "vitest";
import { checkEveryAnswer } from "./conformance.ts";
import { renewCustodyMnemonic } from "./custody.ts";
import { stopTestIndexers } from "./indexer.ts";

renewCustodyMnemonic();
// Every answer of the API a test gets is checked against docs/openapi.json (conformance.ts).
checkEveryAnswer();
afterAll(stopTestIndexers);
