/**
 * The ledger's Merkle trees and entry hashes (api/src/modules/ledger/merkle.ts, entry-hash.ts):
 * vectors worked out by hand, and a cross-check of every proof of trees of 1..17 leaves against
 * OpenZeppelin's Solidity `MerkleProof` (compiled here with the repository's solc and run on the
 * test chain), which the AuditAnchor contract's users verify with.
 */
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";
import { type Address, concat, createPublicClient, createWalletClient, type Hex, http, keccak256, parseEther, stringToHex, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { canonicalEntry, entryHashOf, GENESIS_HASH } from "../../api/src/modules/ledger/entry-hash.ts";
import { hashPair, levels, processProof, proof, root, verify } from "../../api/src/modules/ledger/merkle.ts";
import { testEnvironment } from "../support/environment.ts";

const leaf = (): Hex => toHex(randomBytes(32));
const leavesOf = (n: number) => Array.from({ length: n }, leaf);
/** OpenZeppelin's Hashes.commutativeKeccak256, written out. */
const pair = (a: Hex, b: Hex): Hex => (BigInt(a) < BigInt(b) ? keccak256(concat([a, b])) : keccak256(concat([b, a])));

describe("merkle", () => {
  it("follows the convention by hand: sorted pairs, lone node carried up, one leaf is the root", () => {
    const [a, b, c, d, e] = leavesOf(5) as [Hex, Hex, Hex, Hex, Hex];
    expect(root([a])).toBe(a);
    expect(proof([a], 0)).toEqual([]);
    expect(hashPair(a, b)).toBe(pair(a, b));
    expect(hashPair(b, a)).toBe(pair(a, b));
    expect(root([a, b])).toBe(pair(a, b));
    // Three leaves: c has no sibling on the first level and goes up as it is.
    expect(root([a, b, c])).toBe(pair(pair(a, b), c));
    expect(proof([a, b, c], 0)).toEqual([b, c]);
    expect(proof([a, b, c], 2)).toEqual([pair(a, b)]);
    // Five leaves: e is carried up twice.
    const ab = pair(a, b);
    const cd = pair(c, d);
    expect(root([a, b, c, d, e])).toBe(pair(pair(ab, cd), e));
    expect(proof([a, b, c, d, e], 4)).toEqual([pair(ab, cd)]);
    expect(proof([a, b, c, d, e], 3)).toEqual([c, ab, e]);
    expect(levels([a, b, c, d, e]).map((l) => l.length)).toEqual([5, 3, 2, 1]);
  });

  it("verifies every proof and refuses a wrong leaf, root or position", () => {
    for (let n = 1; n <= 33; n++) {
      const leaves = leavesOf(n);
      const r = root(leaves);
      leaves.forEach((l, i) => {
        const p = proof(leaves, i);
        expect(p.length).toBeLessThanOrEqual(Math.ceil(Math.log2(n)));
        expect(verify(p, r, l)).toBe(true);
        expect(verify(p, r, leaf())).toBe(false);
        expect(verify(p, leaf(), l)).toBe(false);
        if (n > 1) expect(verify(proof(leaves, (i + 1) % n), r, l)).toBe(leaves[(i + 1) % n] === l);
      });
    }
  });

  it("refuses empty trees, out-of-range leaves and malformed hashes", () => {
    expect(() => root([])).toThrow(RangeError);
    expect(() => proof(leavesOf(3), 3)).toThrow(RangeError);
    expect(() => proof(leavesOf(3), -1)).toThrow(RangeError);
    expect(() => root(["0x1234"])).toThrow(TypeError);
  });
});

describe("entry hashes", () => {
  const entry = {
    seq: 1,
    kind: "sale.completed",
    subject_id: "txn_01JD3Y5V0Q3G7W7J6T4N4C2X1M",
    actor_id: "usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M",
    parties: ["usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M", "usr_01JD3Y5V0Q3G7W7J6T4N4C2X1N"],
    data: { price_cents: 1250050, currency: "USD", note: "Café ✓", nested: { b: 1, a: [true, null, 1.5] } },
    created_at: "2026-11-23T10:00:00.123Z",
  };

  it("hashes prev_hash bytes then the RFC 8785 JSON (keys sorted, no spaces)", () => {
    const canonical = canonicalEntry(entry);
    expect(canonical).toBe(
      '{"actor_id":"usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M","created_at":"2026-11-23T10:00:00.123Z","data":{"currency":"USD","nested":{"a":[true,null,1.5],"b":1},"note":"Café ✓","price_cents":1250050},"kind":"sale.completed","parties":["usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M","usr_01JD3Y5V0Q3G7W7J6T4N4C2X1N"],"seq":1,"subject_id":"txn_01JD3Y5V0Q3G7W7J6T4N4C2X1M"}',
    );
    expect(entryHashOf(GENESIS_HASH, entry)).toBe(keccak256(concat([GENESIS_HASH, stringToHex(canonical)])));
    const prev = toHex(randomBytes(32));
    expect(entryHashOf(prev, entry)).not.toBe(entryHashOf(GENESIS_HASH, entry));
    expect(entryHashOf(GENESIS_HASH, { ...entry, data: { ...entry.data, price_cents: 1250051 } })).not.toBe(entryHashOf(GENESIS_HASH, entry));
    expect(() => entryHashOf("0xABC" as Hex, entry)).toThrow(TypeError);
  });
});

describe("merkle proofs against OpenZeppelin's Solidity MerkleProof", () => {
  const HARNESS = `// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
contract MerkleProofHarness {
    function verify(bytes32[] calldata proof, bytes32 root, bytes32 leaf) external pure returns (bool) {
        return MerkleProof.verify(proof, root, leaf);
    }
    function processProof(bytes32[] calldata proof, bytes32 leaf) external pure returns (bytes32) {
        return MerkleProof.processProof(proof, leaf);
    }
}`;
  const abi = [
    { type: "function", name: "verify", stateMutability: "pure", inputs: [{ type: "bytes32[]", name: "proof" }, { type: "bytes32", name: "root" }, { type: "bytes32", name: "leaf" }], outputs: [{ type: "bool", name: "" }] },
    { type: "function", name: "processProof", stateMutability: "pure", inputs: [{ type: "bytes32[]", name: "proof" }, { type: "bytes32", name: "leaf" }], outputs: [{ type: "bytes32", name: "" }] },
  ] as const;
  let harness: Address;
  const client = () => createPublicClient({ transport: http(testEnvironment().rpcUrl) });

  beforeAll(async () => {
    const require = createRequire(import.meta.url);
    const solc = require("solc") as { compile(input: string, options: { import(path: string): { contents: string } | { error: string } }): string };
    const input = {
      language: "Solidity",
      sources: { "MerkleProofHarness.sol": { content: HARNESS } },
      settings: { evmVersion: "cancun", outputSelection: { "*": { "*": ["evm.bytecode.object"] } } },
    };
    const output = JSON.parse(
      solc.compile(JSON.stringify(input), {
        import: (path) => {
          try {
            return { contents: require("node:fs").readFileSync(require.resolve(path), "utf8") as string };
          } catch {
            return { error: `not found: ${path}` };
          }
        },
      }),
    ) as { errors?: { severity: string; formattedMessage: string }[]; contracts: Record<string, Record<string, { evm: { bytecode: { object: string } } }>> };
    const errors = (output.errors ?? []).filter((e) => e.severity === "error");
    if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
    const bytecode = `0x${output.contracts["MerkleProofHarness.sol"]!.MerkleProofHarness!.evm.bytecode.object}` as Hex;

    // A deployer of its own: account #0's nonces belong to other files.
    const account = privateKeyToAccount(generatePrivateKey());
    await client().request({ method: "hardhat_setBalance", params: [account.address, toHex(parseEther("1"))] } as never);
    const wallet = createWalletClient({ account, transport: http(testEnvironment().rpcUrl) });
    const hash = await wallet.deployContract({ abi, bytecode, chain: null });
    harness = (await client().waitForTransactionReceipt({ hash })).contractAddress!;
  });

  it("MerkleProof.verify accepts every proof of trees of 1..17 leaves, and processProof gives the same root", async () => {
    let checked = 0;
    for (let n = 1; n <= 17; n++) {
      const leaves = leavesOf(n);
      const r = root(leaves);
      await Promise.all(
        leaves.map(async (l, i) => {
          const p = proof(leaves, i);
          const [onChain, rootOnChain] = await Promise.all([
            client().readContract({ address: harness, abi, functionName: "verify", args: [p, r, l] }),
            client().readContract({ address: harness, abi, functionName: "processProof", args: [p, l] }),
          ]);
          expect(onChain).toBe(true);
          expect(rootOnChain).toBe(r);
          expect(processProof(p, l)).toBe(r);
          checked++;
        }),
      );
      // A leaf that is not in the tree: refused by both.
      const stranger = leaf();
      expect(await client().readContract({ address: harness, abi, functionName: "verify", args: [proof(leaves, 0), r, stranger] })).toBe(false);
      expect(verify(proof(leaves, 0), r, stranger)).toBe(false);
    }
    expect(checked).toBe((17 * 18) / 2);
  });
});
