import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { CommitBatch, DomainEvent, RequestHeader, ThreadHead } from '../../domain/index.ts';
import { emptyThreadView, project } from '../../protocol/projector.ts';
import { tempDir } from '../support/tempDir.ts';

const header: RequestHeader = { provider: 'scripted', model: null, system: `You are a coding agent. ${'Rules. '.repeat(400)}`, tools: [{ name: 'read', description: 'Reads a file', inputSchema: { type: 'object' } }], digest: 'd1' };

/** A new thread whose one turn records `header` for its first step. */
function batchFor(threadId: string): CommitBatch {
  const events: DomainEvent[] = [
    { type: 'thread.created', title: 'x', workspace: null, owner: null, environment: 'default', permissions: { mode: 'ask', rules: [] } },
    { type: 'turn.requested', turnId: `${threadId}-t1`, input: { text: 'hi' }, provider: { name: 'scripted', model: null }, mode: null },
    { type: 'request.header', turnId: `${threadId}-t1`, step: 1, header },
  ];
  let view = emptyThreadView(threadId, 1);
  for (const [index, event] of events.entries()) view = project(view, { threadSeq: index + 1, at: 1, event });
  const { turns, ...head } = view;
  const commandId = `c-${threadId}`;
  return {
    threadId,
    commandId,
    at: 1,
    expectedThreadSeq: 0,
    events: events.map((event, index) => ({ threadSeq: index + 1, event })),
    head,
    turns: Object.values(turns).map((turn) => ({ previous: null, turn })),
    snapshot: null,
    receipt: { commandId, fingerprint: 'f', threadId, at: 1, outcome: 'accepted', fromThreadSeq: 1, toThreadSeq: events.length, refused: [] },
  };
}

/** The store's rows as LMDB holds them (the store must be closed). */
async function raw<T>(dir: string, name: string): Promise<Array<{ key: unknown; value: T }>> {
  const env = open({ path: dir, maxDbs: 16, readOnly: true });
  const rows = [...env.openDB<T, string | number>({ name }).getRange({})].map(({ key, value }) => ({ key, value }));
  await env.close();
  return rows;
}

describe('request headers, stored once', () => {
  const dir = tempDir('turnloom-headers-');
  afterEach(() => dir.remove());

  it('keeps one copy of a header many threads share, names it from their rows and the log, and reads it back whole', async () => {
    let store = LmdbStore.open(dir.path);
    for (const threadId of ['a', 'b', 'c']) await store.commit(batchFor(threadId));
    await store.close();

    expect(await raw<RequestHeader>(dir.path, 'headers')).toEqual([{ key: 'd1', value: header }]);
    const heads = await raw<ThreadHead>(dir.path, 'threads');
    expect(heads.map(({ value }) => value.header)).toEqual([{ ref: 'd1', seq: 3 }, { ref: 'd1', seq: 3 }, { ref: 'd1', seq: 3 }]);
    const logged = (await raw<{ events: DomainEvent[] }>(dir.path, 'log')).flatMap(({ value }) => value.events).filter((event) => event.type === 'request.header');
    expect(logged.map((event) => (event as { header: unknown }).header)).toEqual([{ ref: 'd1' }, { ref: 'd1' }, { ref: 'd1' }]);

    store = LmdbStore.open(dir.path);
    try {
      expect(store.readView('b')!.header).toEqual({ ...header, seq: 3 });
      expect(store.readThreadEvents('b', 2, 10).map(({ event }) => event)).toEqual([{ type: 'request.header', turnId: 'b-t1', step: 1, header }]);
      expect(store.readLog(0, 100).filter(({ event }) => event.type === 'request.header')).toHaveLength(3);
    } finally {
      await store.close();
    }
  });

  it('reads a thread row written before headers were stored apart, with its header in it', async () => {
    let store = LmdbStore.open(dir.path);
    await store.commit(batchFor('a'));
    await store.close();
    // The row as the code before wrote it: the header itself, not a name for it.
    const env = open({ path: dir.path, maxDbs: 16 });
    const threads = env.openDB<ThreadHead, string>({ name: 'threads' });
    await threads.put('a', { ...threads.get('a')!, header: { ...header, system: 'an older prompt', seq: 3 } });
    await env.close();

    store = LmdbStore.open(dir.path);
    try {
      expect(store.readView('a')!.header).toEqual({ ...header, system: 'an older prompt', seq: 3 });
    } finally {
      await store.close();
    }
  });
});
