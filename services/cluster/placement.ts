/** FNV-1a over the text, then murmur3's finalizer: a cheap 32-bit weight, the same on every engine, and independent for each pair. */
function weight(engineId: string, shard: number): number {
  let hash = 0x811c9dc5;
  const text = `${engineId}\0${shard}`;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/**
 * Which of the live engines should own a shard (rendezvous hashing): every
 * engine computes the same answer from the same list, and when an engine
 * joins or leaves only its share of the shards moves.
 */
export function preferredEngine(shard: number, engines: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const engineId of engines) {
    const w = weight(engineId, shard);
    if (w > bestWeight || (w === bestWeight && best !== undefined && engineId < best)) {
      best = engineId;
      bestWeight = w;
    }
  }
  return best;
}

/** Each shard's preferred engine among `engines`, computed once for a list of engines and kept until the list changes. */
export class PreferredOwners {
  private key = '';
  private owners: Array<string | undefined> = [];

  constructor(private readonly shardCount: number) {}

  of(shard: number, engines: readonly string[]): string | undefined {
    const key = engines.join(',');
    if (key !== this.key) {
      this.owners = Array.from({ length: this.shardCount }, (_, each) => preferredEngine(each, engines));
      this.key = key;
    }
    return this.owners[shard];
  }
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
