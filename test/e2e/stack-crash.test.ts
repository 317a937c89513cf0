/**
 * `npm start` when a child dies: the stack must not limp on with half a platform. It names the
 * process and its log, stops the others, and exits non-zero.
 */
import { afterAll, expect, it } from "vitest";
import { isRunning } from "../../tools/stack/runtime-files.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

let stack: BootedStack | undefined;

afterAll(async () => {
  await stack?.dispose();
}, 90_000);

it("stops everything and exits non-zero when the Hardhat node dies", async () => {
  stack = await bootStack();
  const node = stack.processes.find((p) => p.name === "hardhat node")!;
  process.kill(node.pid, "SIGKILL");

  const exit = await stack.exited;
  expect(exit.code).toBe(1);
  expect(stack.output()).toMatch(/hardhat node \(pid \d+\) exited unexpectedly \(SIGKILL\); see .*hardhat-node\.log/);
  await waitFor(() => stack!.processes.every((p) => !isRunning(p)), { timeoutMs: 5_000, what: "no orphan processes" });
}, 180_000);
