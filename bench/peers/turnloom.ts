import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { ProviderAdapter, ProviderEvent, ToolExecutor, TurnView } from '../../domain/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { CHUNK_CHARS, type Contender, FIRST_TEXT, type Recovery, SECOND_TEXT, type Session, TOOL_INPUT, TOOL_NAME, USER_TEXT, type WorkloadOptions, checkAnswer } from './workload.ts';

/** The scripted provider playing the workload, telling `onStreamed` how far each step's text has got. */
function workloadProvider(workload: WorkloadOptions): ProviderAdapter {
  const scripted = new ScriptedProvider({
    chunkSize: CHUNK_CHARS,
    delayMs: workload.chunkDelayMs,
    // No canned result: the call runs on the worker's tools, the same function the peers' tools run.
    steps: [[{ text: FIRST_TEXT }, { toolCall: { name: TOOL_NAME, input: { ...TOOL_INPUT } } }], [{ text: SECOND_TEXT }]],
  });
  const onStreamed = workload.onStreamed;
  if (!onStreamed) return scripted;
  return {
    name: scripted.name,
    tools: scripted.tools,
    startSession: () => scripted.startSession(),
    async *stream(request, signal): AsyncIterable<ProviderEvent> {
      let streamed = 0;
      for await (const event of scripted.stream(request, signal)) {
        yield event;
        if (event.type === 'text.delta') onStreamed((streamed += event.text.length));
      }
    },
  };
}

/** The workspace's one tool, a read (so it asks nobody first). */
const workloadTools = (workload: WorkloadOptions): ToolExecutor => ({
  specs: () => [],
  classify: (call) => ({ kind: 'read', subject: call.name }),
  execute: async (call) => (call.name === TOOL_NAME ? { output: await workload.tool(), isError: false } : { output: `no tool ${call.name}`, isError: true }),
});

/** The characters streamed, every step's (the settled `text` puts a blank line between two steps). */
const answerText = (turn: TurnView) =>
  turn.messages[1].parts
    .filter((part) => part.kind === 'text')
    .map((part) => part.text)
    .join('');

/** turnloom embedded: the engine, its API and a local worker in this process, over an in-process bus, on LMDB. */
export const turnloom: Contender = {
  key: 'turnloom',
  label: 'turnloom',
  async open(dir, workload) {
    const hub = new InProcessHub();
    const serverBus = hub.connect();
    const clientBus = hub.connect();
    const server = await startTurnloomServer({
      bus: serverBus,
      store: LmdbStore.open(dir),
      providers: { scripted: workloadProvider(workload) },
      localWorker: { sideWork: false, tools: workloadTools(workload) },
    });
    const client = new TurnloomClient(clientBus);
    const session: Session = {
      newThread: async () => (await client.call('thread.create', { title: 'bench' })).threadId,
      async turn(thread) {
        const handle = await client.startTurn({ threadId: thread, text: USER_TEXT });
        const settled = await handle.done;
        checkAnswer('turnloom', answerText(settled.turn).length, settled.state);
      },
      async recover(thread): Promise<Recovery> {
        // What the killed process had made durable, before repair writes anything.
        const before = await server.engine.getThread(thread);
        const turnId = before.openTurnId ?? Object.keys(before.turns).at(-1)!;
        const keptChars = answerText(before.turns[turnId]!).length;
        // Repair settles the turn, or the gateway hands it to this process's worker: wait until it is no longer open.
        await server.repaired;
        for (let waited = 0; (await server.engine.getThread(thread)).openTurnId === turnId; waited += 20) {
          if (waited > 30_000) throw new Error('turnloom: the killed turn was still open 30 s after a restart');
          await sleep(20);
        }
        const turn = (await server.engine.getThread(thread)).turns[turnId]!;
        const parts = turn.messages[1].parts;
        const closed = parts.filter((part) => part.state === 'interrupted').length;
        const unknown = parts.some((part) => part.tool?.outcome === 'unknown');
        return {
          keptChars,
          outcome: `${turn.state}, taken up from the log by the new process's worker (${closed} part${closed === 1 ? '' : 's'} left open closed as interrupted${unknown ? `, the running call's outcome recorded as unknown, not run again` : ''})`,
        };
      },
      async close() {
        await server.stop();
        await Promise.all([clientBus.close(), serverBus.close()]);
      },
    };
    return session;
  },
  // The store's own files (LMDB's data file and its lock file), by size.
  dataBytes: (dir) => readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0),
};
