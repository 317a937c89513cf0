import type { Logger } from "pino";

/**
 * Stops a process's parts in order, within `deadlineMs` in all: a part that hangs (a pool waiting
 * for a database that is gone) is named in the log and left behind, and the process exits anyway.
 * What a part leaves unfinished is durable and taken up by the next process (leases name their
 * holder's presence; see docs/contributors/architecture.md), so a bounded stop loses nothing.
 */
export async function stopInOrder(logger: Logger, deadlineMs: number, steps: ReadonlyArray<readonly [string, () => Promise<unknown> | unknown]>): Promise<void> {
  let current = "";
  const run = (async () => {
    for (const [name, stop] of steps) {
      current = name;
      await stop();
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), deadlineMs);
    timer.unref();
  });
  try {
    if ((await Promise.race([run, late])) === "late") {
      logger.warn({ step: current, deadline_ms: deadlineMs }, "stopping: a part did not stop in time; leaving it (its work is taken up by the next process)");
    }
  } finally {
    clearTimeout(timer);
  }
}
