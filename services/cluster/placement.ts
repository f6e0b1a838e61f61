import { createHash } from 'node:crypto';

/** How much an engine wants a shard: the same on every engine, and independent for each pair. */
function weight(engineId: string, shard: number): bigint {
  return createHash('sha256').update(engineId).update('\0').update(String(shard)).digest().readBigUInt64BE(0);
}

/**
 * Which of the live engines should own a shard (rendezvous hashing): every
 * engine computes the same answer from the same list, and when an engine
 * joins or leaves only its share of the shards moves.
 */
export function preferredEngine(shard: number, engines: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1n;
  for (const engineId of engines) {
    const w = weight(engineId, shard);
    if (w > bestWeight || (w === bestWeight && best !== undefined && engineId < best)) {
      best = engineId;
      bestWeight = w;
    }
  }
  return best;
}

/**
 * Where the events of stream message `streamSeq` start in an engine's own
 * store: every engine numbers every event alike (message `s` holds events
 * `s * SEQ_STRIDE + 1` on), so a listing's positions hold across the
 * cluster and its lists merge by them. A command carries at most what one
 * worker write may (10,000 events), well under the stride.
 */
export const SEQ_STRIDE = 16_384;
export const firstSeqOf = (streamSeq: number): number => streamSeq * SEQ_STRIDE + 1;
export const streamSeqOf = (seq: number): number => Math.floor((seq - 1) / SEQ_STRIDE);
