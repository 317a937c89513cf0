/** A process's bounded stop (api/src/lib/stop-steps.ts): parts in order, a hung one named and left behind. */
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { stopInOrder } from "../../api/src/lib/stop-steps.ts";

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { logger: pino({ level: "warn" }, stream), lines };
}

describe("stopInOrder", () => {
  it("stops the parts in order and says nothing when each stops", async () => {
    const { logger, lines } = capturingLogger();
    const order: string[] = [];
    await stopInOrder(logger, 5_000, [
      ["first", async () => void order.push("first")],
      ["second", () => void order.push("second")],
    ]);
    expect(order).toEqual(["first", "second"]);
    expect(lines).toEqual([]);
  });

  it("names a part that hangs, leaves it and the parts after it, and returns by the deadline", async () => {
    const { logger, lines } = capturingLogger();
    const order: string[] = [];
    await stopInOrder(logger, 50, [
      ["outbox", () => void order.push("outbox")],
      ["job queue", () => new Promise(() => order.push("job queue"))],
      ["pool", () => void order.push("pool")],
    ]);
    expect(order).toEqual(["outbox", "job queue"]);
    expect(lines).toEqual([expect.objectContaining({ step: "job queue", deadline_ms: 50, msg: expect.stringMatching(/did not stop in time/) })]);
  });
});
