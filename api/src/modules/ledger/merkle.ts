import { concat, type Hex, keccak256 } from "viem";

/**
 * Merkle trees of ledger entry hashes as OpenZeppelin's `MerkleProof` checks them: a parent is the
 * commutative keccak256 of its two children (the smaller first, `Hashes.commutativeKeccak256`), so
 * a proof is only the siblings, without left/right flags. Leaves are the entries' `entry_hash` in
 * seq order, not hashed again; a lone node at the end of a level is carried up unchanged (no
 * sibling, nothing added to its proofs); the root of one leaf is that leaf.
 * `MerkleProof.verify(proof(leaves, i), root(leaves), leaves[i])` holds on-chain for every i.
 */

/** keccak256 of the pair, the smaller (as uint256) first. */
export function hashPair(a: Hex, b: Hex): Hex {
  const [x, y] = [a.toLowerCase() as Hex, b.toLowerCase() as Hex];
  return keccak256(x < y ? concat([x, y]) : concat([y, x]));
}

/** Every level of the tree, leaves first, the root's level (one node) last. */
export function levels(leaves: readonly Hex[]): Hex[][] {
  if (leaves.length === 0) throw new RangeError("a Merkle tree needs at least one leaf");
  const out: Hex[][] = [leaves.map(checkedLeaf)];
  for (let level = out[0]!; level.length > 1; ) {
    const next: Hex[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? hashPair(level[i]!, level[i + 1]!) : level[i]!);
    out.push(next);
    level = next;
  }
  return out;
}

export function root(leaves: readonly Hex[]): Hex {
  return rootOf(levels(leaves));
}

export function rootOf(tree: readonly Hex[][]): Hex {
  return tree.at(-1)![0]!;
}

/** The siblings from leaf `index` up to the root (a lone node's level adds none). */
export function proof(leaves: readonly Hex[], index: number): Hex[] {
  return proofOf(levels(leaves), index);
}

export function proofOf(tree: readonly Hex[][], index: number): Hex[] {
  if (!Number.isInteger(index) || index < 0 || index >= tree[0]!.length) throw new RangeError(`leaf ${index} is not in the tree`);
  const siblings: Hex[] = [];
  let i = index;
  for (const level of tree.slice(0, -1)) {
    const sibling = i ^ 1;
    if (sibling < level.length) siblings.push(level[sibling]!);
    i >>= 1;
  }
  return siblings;
}

/** The root that `leaf` and its `proof` fold to (OpenZeppelin's `processProof`). */
export function processProof(proof: readonly Hex[], leaf: Hex): Hex {
  return proof.reduce<Hex>((node, sibling) => hashPair(node, sibling), leaf.toLowerCase() as Hex);
}

/** OpenZeppelin's `MerkleProof.verify`. */
export function verify(proof: readonly Hex[], root: Hex, leaf: Hex): boolean {
  return processProof(proof, leaf) === root.toLowerCase();
}

function checkedLeaf(leaf: Hex): Hex {
  if (!/^0x[0-9a-fA-F]{64}$/.test(leaf)) throw new TypeError(`a leaf must be 32 bytes of 0x-hex: ${leaf}`);
  return leaf.toLowerCase() as Hex;
}
