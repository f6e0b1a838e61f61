import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { CommitBatch, ToolExecutor } from '../../domain/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

/**
 * How often a turn waits for the disk: the worker's writes are merged so a
 * turn commits where its crash story needs it (the step it is about to ask
 * for, a tool about to run, the end), not once per event. Counted on a real
 * LMDB store; the order and content of the log are what they always were.
 */

const dir = tempDir('turnloom-durable-writes-');
let server: TurnloomServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  dir.remove();
});

/** A tool that, when it runs, looks in the store (not in memory) for the record saying it runs. */
function witnessTool(store: LmdbStore, thread: { id: string }, seen: { executingOnDisk: boolean | null }): ToolExecutor {
  return {
    specs: () => [{ name: 'lookup', description: 'looks something up', inputSchema: { type: 'object', properties: {} } }],
    classify: () => ({ kind: 'read', subject: 'lookup' }),
    execute: async () => {
      seen.executingOnDisk = store.readThreadEvents(thread.id, 0, 1_000).some(({ event }) => event.type === 'tool.executing');
      return { output: 'found it', isError: false };
    },
  };
}

/** A real LMDB store that keeps every batch it commits. */
function countedStore(): { store: LmdbStore; commits: CommitBatch[] } {
  const store = LmdbStore.open(dir.path);
  const commits: CommitBatch[] = [];
  const commit = store.commit.bind(store);
  store.commit = (batch) => {
    commits.push(batch);
    return commit(batch);
  };
  return { store, commits };
}

describe('durable writes per turn', () => {
  it('a turn that streams, calls a tool and streams again commits 3 times from its worker, and the tool runs only once its start is on disk', async () => {
    const { store, commits } = countedStore();
    const seen = { executingOnDisk: null as boolean | null };
    const thread = { id: '' };
    const script = { chunkSize: 20, steps: [[{ text: 'x'.repeat(2_000) }, { toolCall: { name: 'lookup', input: { q: 'a' } } }], [{ text: 'y'.repeat(500) }]] };
    const bus = new InProcessHub().connect();
    server = await startTurnloomServer({
      bus,
      store,
      providers: { scripted: new ScriptedProvider(script) },
      defaultProvider: { name: 'scripted', model: null },
      localWorker: { sideWork: false, tools: witnessTool(store, thread, seen) },
    });
    const client = new TurnloomClient(bus);
    thread.id = (await client.call('thread.create', {})).threadId;
    const handle = await client.startTurn({ threadId: thread.id, text: 'go' });
    const settled = await handle.done;
    expect(settled.state).toBe('completed');
    expect(settled.text).toBe(`${'x'.repeat(2_000)}\n\n${'y'.repeat(500)}`);
    expect(seen.executingOnDisk).toBe(true);

    const worker = commits.filter((batch) => batch.commandId.startsWith('sys:record:'));
    const types = worker.map((batch) => batch.events.map(({ event }) => event.type));
    // Each write ends where the turn has to wait: the tool it runs (with the step and the answer that asked for it),
    // the tool's result (the next request is derived from it), the turn's end (with the step that ended it).
    expect(types.map((events) => events.at(-1))).toEqual(['tool.executing', 'step.finished', 'turn.completed']);
    expect(types[0]!.slice(0, 6)).toEqual(['session.started', 'turn.started', 'request.context', 'request.header', 'step.started', 'response.started']);
    expect(types[0]!.slice(-3)).toEqual(['response.completed', 'tools.started', 'tool.executing']);
    expect(types[1]).toEqual(['tool.result', 'step.finished']);
    expect(types[2]![0]).toBe('step.started');
    const text = worker.flatMap((batch) => batch.events.map(({ event }) => event)).filter((event) => event.type === 'part.delta');
    expect(text.map((event) => ('text' in event ? event.text : '')).join('')).toBe('x'.repeat(2_000) + 'y'.repeat(500));
  });

  it("writes a step within the window when the model is slow to answer, not with the answer", async () => {
    const { store, commits } = countedStore();
    const bus = new InProcessHub().connect();
    server = await startTurnloomServer({
      bus,
      store,
      providers: { scripted: new ScriptedProvider({ steps: [[{ wait: 3_000 }, { text: 'late' }]] }) },
      defaultProvider: { name: 'scripted', model: null },
      localWorker: { sideWork: false },
      runner: { flushMs: 200 },
    });
    const client = new TurnloomClient(bus);
    const threadId = (await client.call('thread.create', {})).threadId;
    const handle = await client.startTurn({ threadId, text: 'go' });
    expect((await handle.done).text).toBe('late');
    const worker = commits.filter((batch) => batch.commandId.startsWith('sys:record:')).map((batch) => batch.events.map(({ event }) => event.type));
    // The turn's start and its step were on disk while the model was still silent: a write of their own, before any of the answer.
    expect(worker[0]!.slice(0, 5)).toEqual(['session.started', 'turn.started', 'request.context', 'request.header', 'step.started']);
    expect(worker[0]).not.toContain('part.delta');
    expect(worker.at(-1)!.at(-1)).toBe('turn.completed');
  });
});
