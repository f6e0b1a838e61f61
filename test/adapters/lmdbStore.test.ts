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
