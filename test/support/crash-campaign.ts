/**
 * The crash campaign's parts (test/e2e/crash-campaign.test.ts): writes sent as a client sends them,
 * each step under an Idempotency-Key of its own, so that a step whose answer a crash took can be sent
 * again after the restart; the process to kill and how. (The seeded random source is random.ts.)
 */
import { ApiError } from "../../clients/typescript/index.ts";
import { type ProcessRecord, isRunning, readProcessRecords } from "../../tools/stack/runtime-files.ts";
import type { BootedStack } from "./stack.ts";

/** What became of a step: answered 2xx (its effect must be there), refused (4xx: nothing done), or not known (the answer was lost). */
export type Outcome<T> = { state: "acknowledged"; value: T } | { state: "refused"; status: number; code: string } | { state: "unknown"; error: string };

export interface Step<T = unknown> {
  /** What it is, for the report (`buy-now lst_…`). */
  name: string;
  key: string;
  outcome: Outcome<T> | null;
  /** How often it was sent. */
  sends: number;
}

/** An answer lost to a crash (a connection refused or reset, a gateway error, a request still in progress), not a refusal. */
export function lostAnswer(error: unknown): boolean {
  if (error instanceof ApiError) return error.status >= 500 || error.code === "request_in_progress" || error.status === 429;
  return true;
}

/**
 * A flow of steps, each depending on the one before (list, then buy): run() sends the steps not yet
 * acknowledged, in order, and stops at the first whose answer is lost (run it again after the
 * restart: that step goes again under the same key) or refused (the flow ends there).
 */
export class Flow {
  readonly steps: Step[] = [];
  private readonly plan: { name: string; key: string; send: (previous: unknown[]) => Promise<unknown> }[] = [];

  /** `subject`: the artwork a flow is about (the one it lists), when it has one. */
  constructor(readonly kind: string, private readonly keyPrefix: string, readonly subject?: string) {}

  /** Adds a step; `send(previous)` gets the values of the steps before it, sends under `key`, and returns the value of a 2xx. */
  then<T>(name: string, send: (key: string, previous: unknown[]) => Promise<T>): this {
    const key = `${this.keyPrefix}-${this.plan.length}`;
    this.plan.push({ name, key, send: (previous) => send(key, previous) });
    this.steps.push({ name, key, outcome: null, sends: 0 });
    return this;
  }

  get done(): boolean {
    return this.steps.every((s) => s.outcome?.state === "acknowledged") || this.steps.some((s) => s.outcome?.state === "refused");
  }

  /** The value of step `i`, once acknowledged. */
  value<T>(i: number): T | undefined {
    const outcome = this.steps[i]?.outcome;
    return outcome?.state === "acknowledged" ? (outcome.value as T) : undefined;
  }

  /** Sends what is left; `onAnswer` is called after each answer or loss. */
  async run(onAnswer: () => void = () => {}): Promise<void> {
    for (const [i, step] of this.steps.entries()) {
      if (step.outcome?.state === "acknowledged") continue;
      if (step.outcome?.state === "refused") return;
      const previous = this.steps.slice(0, i).map((s) => (s.outcome as { value: unknown }).value);
      step.sends += 1;
      try {
        step.outcome = { state: "acknowledged", value: await this.plan[i]!.send(previous) };
        onAnswer();
      } catch (error) {
        onAnswer();
        step.outcome = lostAnswer(error)
          ? { state: "unknown", error: error instanceof Error ? error.message : String(error) }
          : { state: "refused", status: (error as ApiError).status, code: (error as ApiError).code };
        return;
      }
    }
  }
}

/** The processes a round may kill: each of the stack's, the stack process itself, or all of them at once. */
export const TARGETS = ["hardhat node", "postgres", "indexer (ponder)", "api", "worker", "stack", "group"] as const;
export type Target = (typeof TARGETS)[number];

/** SIGKILLs `target` of the running stack (each child runs in a process group of its own); the records it killed. */
export function killTarget(stack: BootedStack, target: Target): ProcessRecord[] {
  const records = readProcessRecords(stack.dataDir).filter(isRunning);
  const chosen = target === "group" ? records : records.filter((r) => (target === "indexer (ponder)" ? r.name.startsWith("indexer") : r.name === target));
  if (chosen.length === 0) throw new Error(`no running ${target} in ${records.map((r) => r.name).join(", ")}`);
  for (const record of chosen) {
    try {
      // The stack's own pid leads no group of its own (it is the test's child): kill it alone.
      process.kill(record.name === "stack" ? record.pid : -record.pid, "SIGKILL");
    } catch {
      process.kill(record.pid, "SIGKILL");
    }
  }
  return chosen;
}
