// Runs in every test file's worker before its tests (vitest `setupFiles`).
import { afterAll } from "vitest";
import { stopTestIndexers } from "./indexer.ts";

afterAll(stopTestIndexers);
