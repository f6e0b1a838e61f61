import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { CommitBatch, DomainEvent } from '../../domain/index.ts';
import { project, emptyThreadView } from '../../protocol/projector.ts';
import { readAllReceipts } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

function batchFor(threadId: string, commandId: string, events: DomainEvent[], expectedThreadSeq = 0): CommitBatch {
  let view = emptyThreadView(threadId, 1);
  for (const [index, event] of events.entries()) view = project(view, { threadSeq: index + 1, at: 1, event });
  const { turns, ...head } = view;
  return {
    threadId,
    commandId,
    at: 1,
    expectedThreadSeq,
    events: events.map((event, index) => ({ threadSeq: expectedThreadSeq + index + 1, event })),
    head,
    turns: Object.values(turns).map((turn) => ({ previous: null, turn })),
    snapshot: null,
    receipt: { commandId, fingerprint: 'f', threadId, at: 1, outcome: 'accepted', fromThreadSeq: expectedThreadSeq + 1, toThreadSeq: expectedThreadSeq + events.length, refused: [] },
  };
}

/** The command that takes thread `threadId` from `from` events of `all` to all of them. */
function continued(threadId: string, commandId: string, all: DomainEvent[], from: number): CommitBatch {
  const whole = batchFor(threadId, commandId, all);
  return { ...whole, expectedThreadSeq: from, events: whole.events.slice(from) };
}

const created: DomainEvent = { type: 'thread.created', title: 'x', workspace: null, owner: null, environment: 'default', permissions: { mode: 'ask', rules: [] } };
const requested: DomainEvent = { type: 'turn.requested', turnId: 't1', input: { text: 'hi' }, provider: { name: 'scripted', model: null }, mode: null };

describe('LMDB store', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: LmdbStore;
  beforeEach(() => {
    dir = tempDir('turnloom-store-');
    store = LmdbStore.open(dir.path);
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it('appends to a global log and a per-thread index, with the read model and the open-turn index', async () => {
    const stored = await store.commit(batchFor('a', 'c1', [created, requested]));
    await store.commit(batchFor('b', 'c2', [created]));
    expect(stored.map(({ seq, threadSeq }) => [seq, threadSeq])).toEqual([[1, 1], [2, 2]]);
    expect(store.lastSeq()).toBe(3);
    expect(store.readLog(1, 10).map(({ seq, threadId }) => [seq, threadId])).toEqual([[2, 'a'], [3, 'b']]);
    expect(store.readThreadEvents('a', 1, 10).map(({ event }) => event.type)).toEqual(['turn.requested']);
    expect(store.readThreadEvents('a', 0, 1)).toHaveLength(1);
    expect(store.readView('a')!.turns.t1!.state).toBe('requested');
    expect(store.openTurns()).toEqual([{ threadId: 'a', turnId: 't1' }]);
    expect([...store.threadsNewestFirst(null)].map(({ summary }) => summary).map(({ id, turnCount }) => [id, turnCount])).toEqual([['b', 0], ['a', 1]]);
    expect(store.readReceipt('c1')).toMatchObject({ outcome: 'accepted', fromThreadSeq: 1, toThreadSeq: 2 });
  });

  it('keeps the open-turn index with the thread row, written only where it changes, across a reopen', async () => {
    await store.commit(batchFor('a', 'c1', [created]));
    expect(store.openTurns()).toEqual([]);
    const opened = batchFor('a', 'c2', [created, requested]);
    await store.commit({ ...opened, expectedThreadSeq: 1, events: opened.events.slice(1) });
    expect(store.openTurns()).toEqual([{ threadId: 'a', turnId: 't1' }]);
    // The turn stays open through a write that does not touch the index.
    const staying = batchFor('a', 'c3', [created, requested]);
    await store.commit({ ...staying, expectedThreadSeq: 2, events: [{ threadSeq: 3, event: requested }], head: { ...staying.head, seq: 3 } });
    await store.close();
    store = LmdbStore.open(dir.path);
    expect(store.openTurns()).toEqual([{ threadId: 'a', turnId: 't1' }]);
    const closed = batchFor('a', 'c4', [created]);
    await store.commit({ ...closed, expectedThreadSeq: 3, events: [{ threadSeq: 4, event: requested }], head: { ...closed.head, seq: 4, openTurnId: null } });
    expect(store.openTurns()).toEqual([]);
    expect(store.readSummary('a')).toMatchObject({ id: 'a', seq: 4, openTurnId: null, queuedTurns: 0 });
  });

  it('appends the sequences it gives out, and takes a copy’s positions in any order', async () => {
    await store.commit({ ...batchFor('a', 'c1', [created]), firstSeq: 10 });
    await store.commit({ ...batchFor('b', 'c2', [created]), firstSeq: 4 });
    const [next] = await store.commit(batchFor('c', 'c3', [created]));
    expect(next!.seq).toBe(11);
    expect(store.readLog(0, 10).map(({ seq, threadId }) => [seq, threadId])).toEqual([[4, 'b'], [10, 'a'], [11, 'c']]);
  });

  it('lists a folder of layout 1 from its thread rows, and empties the summaries that layout kept', async () => {
    await store.commit(batchFor('a', 'c1', [created]));
    await store.close();
    // Layout 1 kept a summary row per thread beside the thread's row; a stale one must not be what a listing shows.
    const env = open({ path: dir.path, maxDbs: 32 });
    await env.transaction(() => {
      env.openDB({ name: 'summaries' }).put('a', { id: 'a', title: 'stale', seq: 0 });
      env.openDB({ name: 'meta' }).put('layout', 1);
    });
    await env.close();
    store = LmdbStore.open(dir.path);
    expect([...store.threadsNewestFirst(null)].map(({ summary }) => [summary.id, summary.title, summary.seq])).toEqual([['a', 'x', 1]]);
    await store.close();
    const converted = open({ path: dir.path, maxDbs: 32, readOnly: true });
    const left = { summaries: converted.openDB({ name: 'summaries' }).getCount(), layout: converted.openDB({ name: 'meta' }).get('layout') };
    await converted.close();
    expect(left).toEqual({ summaries: 0, layout: 3 });
    store = LmdbStore.open(dir.path);
  });

  it('gives a new folder no summaries database', async () => {
    await store.commit(batchFor('a', 'c1', [created]));
    await store.close();
    const env = open({ path: dir.path, maxDbs: 32, readOnly: true });
    const databases = [...env.getKeys({})];
    await env.close();
    expect(databases).toContain('threads');
    expect(databases).not.toContain('summaries');
    store = LmdbStore.open(dir.path);
  });

  it('refuses a folder of a newer layout, saying so, and leaves it as it was', async () => {
    await store.commit(batchFor('a', 'c1', [created]));
    await store.close();
    const env = open({ path: dir.path, maxDbs: 32 });
    await env.openDB({ name: 'meta' }).put('layout', 99);
    await env.close();
    expect(() => LmdbStore.open(dir.path)).toThrow(/written by a newer turnloom \(layout 99; this one reads up to \d+\): upgrade turnloom/);
    const after = open({ path: dir.path, maxDbs: 32, readOnly: true });
    const left = { layout: after.openDB({ name: 'meta' }).get('layout'), owner: after.openDB({ name: 'meta' }).get('owner') ?? null };
    await after.close();
    expect(left).toEqual({ layout: 99, owner: null });
    const env2 = open({ path: dir.path, maxDbs: 32 });
    await env2.openDB({ name: 'meta' }).put('layout', 2);
    await env2.close();
    store = LmdbStore.open(dir.path);
    expect(store.readSummary('a')).toMatchObject({ id: 'a' });
  });

  it('keeps a command as one log value and one thread entry, and reads events from inside one at any limit', async () => {
    const renamed = (n: number): DomainEvent => ({ type: 'thread.renamed', title: `t${n}` });
    const a = [created, renamed(1), renamed(2), renamed(3), renamed(4)];
    await store.commit(batchFor('a', 'c1', a.slice(0, 3)));
    await store.commit(batchFor('b', 'c2', [created]));
    await store.commit(continued('a', 'c3', a, 3));
    const places = (events: Array<{ seq: number; threadSeq: number; commandId: string }>) => events.map(({ seq, threadSeq, commandId }) => [seq, threadSeq, commandId]);
    expect(places(store.readLog(0, 100))).toEqual([[1, 1, 'c1'], [2, 2, 'c1'], [3, 3, 'c1'], [4, 1, 'c2'], [5, 4, 'c3'], [6, 5, 'c3']]);
    expect(places(store.readLog(1, 2))).toEqual([[2, 2, 'c1'], [3, 3, 'c1']]);
    expect(places(store.readLog(2, 3))).toEqual([[3, 3, 'c1'], [4, 1, 'c2'], [5, 4, 'c3']]);
    expect(places(store.readThreadEvents('a', 1, 1))).toEqual([[2, 2, 'c1']]);
    expect(places(store.readThreadEvents('a', 2, 2))).toEqual([[3, 3, 'c1'], [5, 4, 'c3']]);
    expect(store.readThreadEvents('a', 4, 10).map(({ event }) => event)).toEqual([renamed(4)]);
    expect(store.readThreadEvents('a', 5, 10)).toEqual([]);
    expect(store.readView('a')!.title).toBe('t4');
    expect([store.lastSeq(), store.firstEventSeq('a'), store.lastEventSeq('a'), store.firstEventSeq('b'), store.lastEventSeq('b'), store.firstEventSeq('z')]).toEqual([6, 1, 6, 4, 4, 0]);
    await store.close();
    const env = open({ path: dir.path, maxDbs: 32, readOnly: true });
    const rows = { log: [...env.openDB({ name: 'log' }).getKeys({})], threadLog: [...env.openDB({ name: 'threadLog' }).getKeys({})] };
    await env.close();
    expect(rows).toEqual({ log: [3, 4, 6], threadLog: [['a', 3], ['a', 5], ['b', 1]] });
    store = LmdbStore.open(dir.path);
  });

  it('reads a log of layout 2, an event a value, and goes on with commands after it', async () => {
    const all: DomainEvent[] = [created, requested, { type: 'thread.renamed', title: 'later' }];
    await store.commit(batchFor('a', 'c1', all.slice(0, 2)));
    await store.close();
    // As layout 2 wrote the same command: a value and a thread entry for each event.
    const env = open({ path: dir.path, maxDbs: 32 });
    await env.transaction(() => {
      const log = env.openDB<unknown, number>({ name: 'log' });
      const threadLog = env.openDB<number, [string, number]>({ name: 'threadLog' });
      log.remove(2);
      threadLog.remove(['a', 2]);
      for (const [index, event] of all.slice(0, 2).entries()) {
        log.put(index + 1, { seq: index + 1, threadId: 'a', threadSeq: index + 1, commandId: 'c1', at: 1, event });
        threadLog.put(['a', index + 1], index + 1);
      }
      env.openDB({ name: 'meta' }).put('layout', 2);
    });
    await env.close();
    store = LmdbStore.open(dir.path);
    expect(store.readThreadEvents('a', 1, 10).map(({ seq, event }) => [seq, event])).toEqual([[2, requested]]);
    await store.commit(continued('a', 'c2', all, 2));
    expect(store.readThreadEvents('a', 0, 10).map(({ seq, threadSeq, commandId }) => [seq, threadSeq, commandId])).toEqual([[1, 1, 'c1'], [2, 2, 'c1'], [3, 3, 'c2']]);
    expect(store.readLog(1, 10).map(({ seq }) => seq)).toEqual([2, 3]);
    expect([store.firstEventSeq('a'), store.lastEventSeq('a'), store.lastSeq()]).toEqual([1, 3, 3]);
  });

  it('refuses a command whose thread sequences do not follow the thread on, writing nothing', async () => {
    const all: DomainEvent[] = [created, { type: 'thread.renamed', title: 'y' }, { type: 'thread.renamed', title: 'z' }];
    await store.commit(batchFor('a', 'c1', [created]));
    const gap = continued('a', 'c2', all, 1);
    gap.events[1] = { ...gap.events[1]!, threadSeq: 4 };
    await expect(store.commit(gap)).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('thread sequence 4 where 3 is next') });
    expect([store.lastSeq(), store.readView('a')!.seq, store.readReceipt('c2')]).toEqual([1, 1, undefined]);
  });

  it('writes all of a batch or none of it', async () => {
    await store.commit(batchFor('a', 'c1', [created]));
    // A turn row that cannot be encoded fails after the events were put: nothing may remain.
    const broken = batchFor('a', 'c2', [requested], 1);
    broken.turns = [{ previous: null, turn: { ...broken.turns[0]!.turn, provider: { name: Symbol('no') as unknown as string, model: null } } }];
    await expect(store.commit(broken)).rejects.toThrow();
    expect(store.lastSeq()).toBe(1);
    expect(store.readReceipt('c2')).toBeUndefined();
    expect(store.readView('a')!.seq).toBe(1);
    expect(store.openTurns()).toEqual([]);

    // A batch decided on a stale sequence is refused whole.
    await expect(store.commit(batchFor('a', 'c3', [requested], 0))).rejects.toMatchObject({ code: 'conflict' });
    expect(store.lastSeq()).toBe(1);
    // And a command id is never answered twice.
    await expect(store.commit(batchFor('a', 'c1', [requested], 1))).rejects.toMatchObject({ code: 'conflict' });
    expect(store.lastSeq()).toBe(1);
    await store.close();
    expect((await readAllReceipts(dir.path)).map(({ commandId }) => commandId)).toEqual(['c1']);
    store = LmdbStore.open(dir.path);
  });

  it('keeps snapshots stamped with the sequence and machine version', async () => {
    const batch = batchFor('a', 'c1', [created]);
    batch.snapshot = { threadSeq: 1, machinesVersion: 'v1', actors: [] };
    await store.commit(batch);
    expect(store.readSnapshot('a')).toEqual({ threadSeq: 1, machinesVersion: 'v1', actors: [] });
  });

  it('stores a rejection as a receipt and nothing else', async () => {
    await store.commitRejection({ commandId: 'r1', fingerprint: 'f', threadId: 'a', at: 1, outcome: 'rejected', error: { code: 'conflict', message: 'no', details: {} } });
    expect(store.readReceipt('r1')).toMatchObject({ outcome: 'rejected' });
    expect(store.lastSeq()).toBe(0);
    expect([...store.threadsNewestFirst(null)].map(({ summary }) => summary)).toEqual([]);
  });
});
