/**
 * A cluster spreads threads over a fixed number of shards, each owned by
 * one engine at a time. A thread's shard comes from a 16-bit key of its id:
 * the id's own first four hex digits when it is one the system makes
 * (`thr_` and 24 hex digits, uniform because they come from a hash), a hash
 * of the id otherwise (an id a client chose). A sub-agent's thread is given
 * its parent's key (`colocatedThreadId`), so a thread and its children are
 * always in one shard: one engine answers for the whole tree.
 */
const KEYED_ID = /^thr_([0-9a-f]{4})[0-9a-f]{20}$/;

/** The most shards a cluster may have: every one of them must be reachable by a key. */
export const MAX_SHARDS = 1 << 16;

/** FNV-1a, 32 bits: pure JS, the same on every engine, worker and browser. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193) >>> 0;
  return hash;
}

/** The thread's 16-bit shard key. */
export function shardKeyOf(threadId: string): number {
  const keyed = KEYED_ID.exec(threadId)?.[1];
  return keyed === undefined ? fnv1a32(threadId) >>> 16 : Number.parseInt(keyed, 16);
}

/** Which of `shardCount` shards the thread is in. */
export const shardOf = (threadId: string, shardCount: number): number => shardKeyOf(threadId) % shardCount;

/** `id` (a `thr_` id made from a hash) changed to carry `parentThreadId`'s shard key: the two are in one shard, whatever the count. */
export function colocatedThreadId(id: string, parentThreadId: string): string {
  if (!KEYED_ID.test(id)) throw new Error(`colocatedThreadId: ${id} is not a thr_ id of 24 hex digits`);
  return `thr_${shardKeyOf(parentThreadId).toString(16).padStart(4, '0')}${id.slice(8)}`;
}
