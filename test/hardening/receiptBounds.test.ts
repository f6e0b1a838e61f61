import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { DomainEvent, Receipt } from '../../domain/index.ts';
import type { Command } from '../../services/engine/commands.ts';
import { leaseKeyHash } from '../../services/engine/decide.ts';
import { Engine } from '../../services/engine/engine.ts';
import { createThread, readAllReceipts, startTurn, turnEvents } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

type Rejected = Extract<Receipt, { outcome: 'rejected' }>;

const rejected = (threadId: string, commandId: string, at: number): Rejected => ({
  commandId,
  fingerprint: 'f',
  threadId,
  at,
  outcome: 'rejected',
  error: { code: 'conflict', message: 'refused', details: {} },
});

/** The thread index as the folder holds it (store closed): each thread's kept count, and its receipts' ids oldest first. */
async function readThreadIndex(dir: string): Promise<{ counts: Record<string, number>; ids: Record<string, string[]> }> {
  const env = open({ path: dir, maxDbs: 16, readOnly: true });
  const counts: Record<string, number> = {};
  const ids: Record<string, string[]> = {};
  for (const { key, value } of env.openDB<number, string | [string, number, string]>({ name: 'threadReceipts' }).getRange({})) {
    if (typeof key === 'string') counts[key] = value;
    else (ids[key[0]] ??= []).push(key[2]);
  }
  await env.close();
  return { counts, ids };
}

/** What the index says agrees with the receipts themselves: every count is its thread's number of receipts. */
async function expectIndexMatchesReceipts(dir: string): Promise<void> {
  const { counts, ids } = await readThreadIndex(dir);
  const byThread: Record<string, string[]> = {};
  for (const { threadId, commandId } of await readAllReceipts(dir)) (byThread[threadId] ??= []).push(commandId);
  expect(Object.fromEntries(Object.entries(ids).map(([threadId, kept]) => [threadId, [...kept].sort()]))).toEqual(Object.fromEntries(Object.entries(byThread).map(([threadId, kept]) => [threadId, kept.sort()])));
  expect(counts).toEqual(Object.fromEntries(Object.entries(byThread).map(([threadId, kept]) => [threadId, kept.length])));
}

describe('receipts, bounded per thread', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('turnloom-receipt-bounds-');
  });
  afterEach(() => dir.remove());

  it('a thread past its bound forgets its own oldest, in the write that passes it, and no other thread\'s', async () => {
    const store = LmdbStore.open(dir.path);
    store.capReceipts(3);
    await store.commitRejection(rejected('quiet', 'quiet-1', 1));
    await store.commitRejection(rejected('quiet', 'quiet-2', 2));
    const busy = Array.from({ length: 7 }, (_, index) => `busy-${index + 1}`);
    for (const [index, commandId] of busy.entries()) {
      await store.commitRejection(rejected('busy', commandId, 10 + index));
      expect(busy.filter((id) => store.readReceipt(id))).toEqual(busy.slice(Math.max(0, index - 2), index + 1));
    }
    expect(store.readReceipt('quiet-1')).toMatchObject({ threadId: 'quiet' });
    expect(store.readReceipt('quiet-2')).toMatchObject({ threadId: 'quiet' });
    expect(store.receiptTotal()).toBe(5);
    await store.close();
    expect(await readThreadIndex(dir.path)).toEqual({ counts: { busy: 3, quiet: 2 }, ids: { busy: ['busy-5', 'busy-6', 'busy-7'], quiet: ['quiet-1', 'quiet-2'] } });
  });

  it('a busy thread cannot evict a quiet thread\'s receipt: a late retry there gets its first answer and runs nothing again', async () => {
    let now = 1_000_000;
    const store = LmdbStore.open(dir.path);
    const engine = await Engine.open({ store, now: () => now, receipts: { maxPerThread: 10 } });
    await engine.submit(createThread('quiet'));
    await engine.submit(createThread('busy'));
    const rename = { type: 'thread.rename', commandId: 'quiet-rename', threadId: 'quiet', title: 'the quiet one' } as const;
    const first = await engine.submit(rename, { clientCommandId: true });
    for (let index = 0; index < 50; index++) {
      now += 1_000;
      await engine.submit({ type: 'thread.rename', commandId: `busy-${index}`, threadId: 'busy', title: `busy ${index}` }, { clientCommandId: true });
    }
    // Minutes later, past JetStream's two-minute duplicate window, the quiet thread's client retries.
    now += 5 * 60_000;
    expect(await engine.submit(rename, { clientCommandId: true })).toEqual(first);
    expect((await engine.getThread('quiet')).seq).toBe(first.toThreadSeq);
    // The busy thread kept its newest 10; the quiet one all it had (its creation and the rename).
    expect(store.receiptTotal()).toBe(12);
    await engine.close();
    await expectIndexMatchesReceipts(dir.path);
  });

  it('expire by age across threads, oldest first, and a thread whose receipts expired holds its whole bound again', async () => {
    const store = LmdbStore.open(dir.path);
    store.capReceipts(3);
    for (const [threadId, commandId, at] of [['a', 'a-1', 1], ['b', 'b-1', 2], ['a', 'a-2', 3], ['b', 'b-2', 4], ['a', 'a-3', 5]] as const) {
      await store.commitRejection(rejected(threadId, commandId, at));
    }
    expect(await store.expireReceipts(4, 10)).toBe(3);
    expect(['a-1', 'b-1', 'a-2', 'b-2', 'a-3'].filter((id) => store.readReceipt(id))).toEqual(['b-2', 'a-3']);
    // At most a batch per call.
    expect(await store.expireReceipts(100, 1)).toBe(1);
    expect(store.readReceipt('b-2')).toBeUndefined();
    // Thread a has one left: two more fill its bound, and nothing of it is forgotten early.
    await store.commitRejection(rejected('a', 'a-4', 6));
    await store.commitRejection(rejected('a', 'a-5', 7));
    expect(store.receiptTotal()).toBe(3);
    await store.commitRejection(rejected('a', 'a-6', 8));
    expect(store.readReceipt('a-3')).toBeUndefined();
    await store.close();
    // A thread with no receipts left keeps no count.
    expect(await readThreadIndex(dir.path)).toEqual({ counts: { a: 3 }, ids: { a: ['a-4', 'a-5', 'a-6'] } });
  });

  it('a sweep goes on past one batch until every receipt past its age is gone: age is all that bounds the total', async () => {
    let now = 1_000_000;
    const store = LmdbStore.open(dir.path);
    const engine = await Engine.open({ store, now: () => now, receipts: { ttlMs: 60_000 } });
    await Promise.all(Array.from({ length: 2_100 }, (_, index) => engine.submit(createThread(`th-${index}`))));
    now += 61_000;
    expect(await engine.expireReceipts()).toBe(2_100);
    expect(store.receiptTotal()).toBe(0);
    await engine.close();
    expect(await readThreadIndex(dir.path)).toEqual({ counts: {}, ids: {} });
  });

  it('a lease\'s writes replace its one receipt and leave its thread\'s count as it was', async () => {
    const store = LmdbStore.open(dir.path);
    const engine = await Engine.open({ store, receipts: { maxPerThread: 4 } });
    await engine.submit(createThread('th'));
    await engine.submit(startTurn('th', 't1'));
    const key = 'the-worker-key';
    const token = (await engine.submit({ type: 'turn.lease', commandId: 'lease-1', threadId: 'th', turnId: 't1', workerId: 'w1', keyHash: leaseKeyHash(key) })).toThreadSeq;
    const write = (seq: number, events: DomainEvent[]): Command => ({ type: 'turn.record', commandId: `sys:record:th:t1:${token}:${seq}`, threadId: 'th', turnId: 't1', lease: { token, key }, seq, events });
    const t = turnEvents('t1');
    await engine.submit(write(1, [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }]));
    for (let seq = 2; seq <= 30; seq++) await engine.submit(write(seq, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: `chunk ${seq} ` }]));
    // The creation, the start, the lease and the lease's last write: all four kept, within a bound of four.
    expect(store.receiptTotal()).toBe(4);
    await engine.close();
    await expectIndexMatchesReceipts(dir.path);
    expect((await readThreadIndex(dir.path)).counts).toEqual({ th: 4 });
  });

  it('a folder written before the thread index gets it on open, and its threads are bounded from their next write', async () => {
    // What the layout before wrote: receipts by id and their ages, and no thread index.
    const env = open({ path: dir.path, maxDbs: 16 });
    const receipts = env.openDB<Receipt, string>({ name: 'receipts' });
    const ages = env.openDB<1, [number, string]>({ name: 'receiptAges' });
    const written = [rejected('a', 'a-1', 1), rejected('b', 'b-1', 2), rejected('a', 'a-2', 3), rejected('a', 'a-3', 4), rejected('a', 'a-4', 5)];
    await env.transaction(() => {
      for (const receipt of written) {
        receipts.put(receipt.commandId, receipt);
        ages.put([receipt.at, receipt.commandId], 1);
      }
    });
    await env.close();

    await LmdbStore.open(dir.path).close();
    expect(await readThreadIndex(dir.path)).toEqual({ counts: { a: 4, b: 1 }, ids: { a: ['a-1', 'a-2', 'a-3', 'a-4'], b: ['b-1'] } });

    const store = LmdbStore.open(dir.path);
    store.capReceipts(3);
    expect(store.receiptTotal()).toBe(5);
    expect(store.readReceipt('a-1')).toMatchObject({ outcome: 'rejected' });
    // Thread a was past the new bound: its next write brings it within, and b keeps its own.
    await store.commitRejection(rejected('a', 'a-5', 6));
    expect(['a-1', 'a-2', 'a-3', 'a-4', 'a-5', 'b-1'].filter((id) => store.readReceipt(id))).toEqual(['a-3', 'a-4', 'a-5', 'b-1']);
    expect(await store.expireReceipts(5, 10)).toBe(2);
    await store.close();
    expect(await readThreadIndex(dir.path)).toEqual({ counts: { a: 2 }, ids: { a: ['a-4', 'a-5'] } });
  });
});
