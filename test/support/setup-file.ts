// Runs before each test file, in the worker that runs it (vitest `setupFiles`; with isolate off a
// worker runs several files one after another, and this runs again before each).
import { afterAll } from "vitest";
import { renewCustodyMnemonic } from "./custody.ts";
import { stopTestIndexers } from "./indexer.ts";

renewCustodyMnemonic();
afterAll(stopTestIndexers);
