import { type Hex, keccak256, type PublicClient, toHex } from "viem";
import { chainClient, untypedRequest } from "./chain.ts";
import type { ChainJournal } from "./chain-journal.ts";

/** Why a journal could not be brought back onto a new node, in a sentence. */
export class ChainReplayError extends Error {
  override name = "ChainReplayError";
}

/**
 * Replays `journal` onto a node started with its genesis time: automine off, each block's
 * transactions sent as they were signed (and the stack's recorded calls made in their places), the
 * block mined at its recorded timestamp. Prevrandao, coinbase and base fee need no help: the node
 * derives them the same way again. The last block's hash commits to every block before it, so it
 * alone is checked, unless something fails on the way. Resolves with the number of blocks replayed.
 */
export async function replayChainJournal(rpcUrl: string, journal: ChainJournal): Promise<number> {
  if (journal.problem) throw new ChainReplayError(journal.problem);
  const client = chainClient(rpcUrl);
  const request = untypedRequest(client);
  const [chainId, genesis] = await Promise.all([client.getChainId(), client.getBlock({ blockNumber: 0n })]);
  if (chainId !== journal.genesis.chainId || genesis.hash !== journal.genesis.hash) {
    throw new ChainReplayError(
      `the node's genesis block is ${genesis.hash} on chain id ${chainId}, the journal's ${journal.genesis.hash} on chain id ${journal.genesis.chainId} (another Hardhat version or network settings?)`,
    );
  }

  let mined = 0;
  await request("evm_setAutomine", [false]);
  try {
    for (const entry of journal.entries) {
      if (entry.type === "call") {
        await request(entry.method, entry.params).catch((error: Error) => {
          throw new ChainReplayError(`the recorded ${entry.method} after block ${mined} was refused: ${firstLine(error)}`);
        });
        continue;
      }
      if (entry.unreplayable) throw new ChainReplayError(`block ${entry.number} cannot be replayed: ${entry.unreplayable}`);
      for (const raw of entry.transactions) {
        await request("eth_sendRawTransaction", [raw]).catch(async (error: Error) => {
          throw (await divergence(client, journal.hashes, mined)) ??
            new ChainReplayError(`block ${entry.number}'s transaction ${keccak256(raw)} was refused: ${firstLine(error)}`);
        });
      }
      await request("evm_mine", [toHex(entry.timestamp)]).catch((error: Error) => {
        throw new ChainReplayError(`block ${entry.number} could not be mined at its timestamp ${entry.timestamp}: ${firstLine(error)}`);
      });
      mined = entry.number;
    }
    const top = journal.hashes.length - 1;
    const head = await client.getBlock({ blockTag: "latest" });
    if (Number(head.number) !== top) throw new ChainReplayError(`the replay ended at block ${head.number}, the journal at block ${top}`);
    const differs = await divergence(client, journal.hashes, top);
    if (differs) throw differs;
  } finally {
    await request("evm_setAutomine", [true]).catch(() => {});
  }
  return mined;
}

/**
 * The first block up to `upTo` whose hash is not the recorded one, as an error; null when block
 * `upTo` matches (and with it, through the parent hashes, every block before it).
 */
async function divergence(client: PublicClient, hashes: Hex[], upTo: number): Promise<ChainReplayError | null> {
  const hashAt = async (number: number) => (await client.getBlock({ blockNumber: BigInt(number) })).hash;
  if (upTo === 0 || (await hashAt(upTo)) === hashes[upTo]) return null;
  // Once a block differs, every later one does: a binary search finds the first.
  let [low, high] = [1, upTo];
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    if ((await hashAt(middle)) === hashes[middle]) low = middle + 1;
    else high = middle;
  }
  return new ChainReplayError(
    `block ${low} came out as ${await hashAt(low)} where the journal recorded ${hashes[low]} (state changed from outside the stack, e.g. hardhat_setBalance, or an edited journal)`,
  );
}

function firstLine(error: Error): string {
  return error.message.split("\n")[0]!;
}
