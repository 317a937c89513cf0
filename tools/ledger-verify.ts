/**
 * Checks one audit-ledger entry against the chain alone: no API, no database.
 *
 *   curl -s -H "Authorization: Bearer $TOKEN" $API/v1/marketplace/ledger/led_… > entry.json
 *   npx tsx tools/ledger-verify.ts entry.json https://rpc.example.org     (or - to read stdin)
 *
 * 1. recomputes entry_hash = keccak256(prev_hash ‖ UTF-8 of the RFC 8785 JSON of the entry's fields);
 * 2. folds the entry's Merkle proof into it (OpenZeppelin MerkleProof: keccak256 of each sorted pair);
 * 3. reads anchorAt(anchor_index) of the AuditAnchor contract and compares its root (and range).
 * Exit code 0 when the entry is anchored as served, 1 when anything differs, 2 when not anchored yet.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { type Address, createPublicClient, type Hex, http } from "viem";
import { auditAnchorAbi } from "../contracts/abi/AuditAnchor.ts";
import { entryHashOf } from "../api/src/modules/ledger/entry-hash.ts";
import { processProof } from "../api/src/modules/ledger/merkle.ts";

/** The entry as GET /v1/marketplace/ledger/:entry_id answers it. */
export interface ServedEntry {
  seq: number;
  kind: string;
  subject_id: string;
  actor_id: string | null;
  parties: string[];
  data: Record<string, unknown>;
  created_at: string;
  prev_hash: Hex;
  entry_hash: Hex;
  anchor: null | { anchor_index: number; first_seq: number; last_seq: number; chain_id: number; contract_address: Address; proof: Hex[] };
}

export interface EntryCheck {
  /** "anchored": everything matches; "mismatch": see `problems`; "unanchored": no anchor to check against yet. */
  verdict: "anchored" | "mismatch" | "unanchored";
  recomputedHash: Hex;
  /** The root the proof folds to, and the one the contract holds. */
  foldedRoot: Hex | null;
  chainRoot: Hex | null;
  problems: string[];
}

export async function checkEntryAgainstChain(entry: ServedEntry, rpcUrl: string): Promise<EntryCheck> {
  const { seq, kind, subject_id, actor_id, parties, data, created_at } = entry;
  const recomputedHash = entryHashOf(entry.prev_hash, { seq, kind, subject_id, actor_id, parties, data, created_at });
  const problems: string[] = [];
  if (recomputedHash !== entry.entry_hash) problems.push(`entry_hash ${entry.entry_hash} is not the hash of the entry's content (${recomputedHash})`);
  const anchor = entry.anchor;
  if (!anchor) return { verdict: problems.length ? "mismatch" : "unanchored", recomputedHash, foldedRoot: null, chainRoot: null, problems };

  // The leaf is the hash recomputed here, not the one served: the proof must hold for the content.
  const foldedRoot = processProof(anchor.proof, recomputedHash);
  const client = createPublicClient({ transport: http(rpcUrl) });
  const chainId = await client.getChainId();
  if (chainId !== anchor.chain_id) problems.push(`the RPC serves chain ${chainId}, the anchor is on chain ${anchor.chain_id}`);
  const onChain = await client.readContract({ address: anchor.contract_address, abi: auditAnchorAbi, functionName: "anchorAt", args: [BigInt(anchor.anchor_index)] });
  const chainRoot = onChain.merkleRoot.toLowerCase() as Hex;
  if (BigInt(seq) < onChain.firstSeq || BigInt(seq) > onChain.lastSeq) problems.push(`entry ${seq} is outside anchor ${anchor.anchor_index} (entries ${onChain.firstSeq}..${onChain.lastSeq})`);
  if (foldedRoot !== chainRoot) problems.push(`the proof folds to ${foldedRoot}, the contract holds ${chainRoot}`);
  return { verdict: problems.length ? "mismatch" : "anchored", recomputedHash, foldedRoot, chainRoot, problems };
}

async function main(): Promise<void> {
  const [file, rpcUrl] = process.argv.slice(2);
  if (!file || !rpcUrl) {
    process.stderr.write("usage: npx tsx tools/ledger-verify.ts <entry.json | -> <rpc-url>\n");
    process.exit(64);
  }
  const entry = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8")) as ServedEntry;
  const check = await checkEntryAgainstChain(entry, rpcUrl);
  process.stdout.write(`entry ${entry.seq}: entry_hash recomputed ${check.recomputedHash}\n`);
  if (check.foldedRoot) process.stdout.write(`proof folds to ${check.foldedRoot}; anchorAt(${entry.anchor!.anchor_index}).merkleRoot = ${check.chainRoot}\n`);
  for (const problem of check.problems) process.stdout.write(`MISMATCH: ${problem}\n`);
  process.stdout.write(check.verdict === "anchored" ? "OK: the entry is anchored on-chain as served\n" : check.verdict === "unanchored" ? "not anchored yet: try again later\n" : "FAILED\n");
  process.exit(check.verdict === "anchored" ? 0 : check.verdict === "unanchored" ? 2 : 1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
