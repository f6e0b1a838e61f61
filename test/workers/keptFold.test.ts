import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

describe('a worker’s fold of a thread, kept for its next turn', () => {
  const dir = tempDir('turnloom-kept-fold-');
  afterAll(() => dir.remove());

  it('reads only the events since its last turn of the thread, and derives the same request as a fold loaded whole', async () => {
    const hub = new InProcessHub();
    const provider = new ScriptedProvider({ chunkSize: 8, steps: [[{ text: 'an answer' }]] });
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), providers: { scripted: provider }, localWorker: { sideWork: false } });
    const client = new TurnloomClient(hub.connect());
    // What the worker reads of threads, by method, as the bus carries it.
    const reads: string[] = [];
    hub.connect().subscribe('>', (message) => {
      const method = message.subject.match(/\.worker\..*\.(thread\.\w+)$/)?.[1];
      if (method) reads.push(method);
    });
    const { threadId } = await client.call('thread.create', { title: 'kept' });
    for (const text of ['one', 'two', 'three']) {
      if (text === 'three') reads.length = 0;
      const handle = await client.startTurn({ threadId, text });
      expect((await handle.done).state).toBe('completed');
    }
    // The third turn's fold started from the second's: the log since then, no head and no older turns again.
    expect(reads).toContain('thread.events');
    expect(reads.filter((method) => method === 'thread.get' || method === 'thread.turns')).toEqual([]);
    // Each step's digest was checked by the engine against its own log: the kept fold sent what the log says.
    const thread = (await client.call('thread.get', { threadId })).thread;
    expect(thread.turnIds.map((turnId) => thread.turns[turnId]!.messages[1].parts.map((part) => part.text).join(''))).toEqual(['an answer', 'an answer', 'an answer']);
    await server.stop();
  }, 30_000);
});
