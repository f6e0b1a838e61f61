import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { Bus } from '../../domain/index.ts';
import { chatText, chatToolCalls, openAiEnv } from '../cli/runFixtures.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';

const essay = 'An essay streamed slowly, piece by piece, so that the worker writing it can be killed halfway. '.repeat(4);

/** The model, answering each request by what it is: the parent delegates, then reports; the child writes slowly. */
async function delegatingModel(): Promise<RecordedStreamServer> {
  return serveRecordedStream('openai-chat', (body) => {
    const request = body as { messages: Array<{ role: string; content: unknown }> };
    const firstUser = request.messages.find((message) => message.role === 'user')?.content;
    const toolResult = request.messages.findLast((message) => message.role === 'tool')?.content;
    if (firstUser === 'write the essay') return { kind: 'stream', chunks: chatText(essay), delayMs: 40 };
    if (toolResult === undefined) return { kind: 'stream', chunks: chatToolCalls([{ callId: 'call_essay', name: 'task', input: { agent: 'general', prompt: 'write the essay' } }]) };
    return { kind: 'stream', chunks: chatText(`The sub-agent answered: ${String(toolResult).slice(0, 40)}`) };
  });
}

/**
 * Delegation with the engine and workers in their own processes on a real
 * nats-server: a child is a turn like any other, so a worker killed under
 * it costs the child a resume, never the parent its answer.
 */
describe('delegation across processes', () => {
  let nats: NatsServerHandle;
  let model: RecordedStreamServer;
  const dir = tempDir('turnloom-delegation-remote-');
  const processes: CliProcess[] = [];
  const buses: Bus[] = [];
  beforeAll(async () => {
    nats = await startNatsServer();
    model = await delegatingModel();
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((process) => process.kill('SIGKILL')));
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
  });
  afterAll(async () => {
    await model.close();
    await nats.dispose();
    dir.remove();
  });

  it.each([
    { killed: 'child', story: 'the child resumes on the other worker' },
    { killed: 'parent', story: "the parent's call is taken up against the child it has, never a second one" },
  ] as const)('SIGKILL of the worker running the $killed: $story, and the parent completes with its answer exactly once', async ({ killed }) => {
    const prefix = `dl${process.pid}${killed}`;
    const workspace = join(dir.path, `ws-${killed}`);
    mkdirSync(workspace);
    const start = (args: string[]) => {
      const started = runCli(args, { env: openAiEnv(model.baseURL) });
      processes.push(started);
      return started;
    };
    await start(['serve', '--nats', nats.url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, `engine-${killed}`), '--lease-timeout', '2']).waitFor('data:');
    const workers = new Map<string, CliProcess>();
    for (const id of ['w1', 'w2']) {
      const worker = start(['worker', '--nats', nats.url, '--workspace', workspace, '--id', id, '--prefix', prefix]);
      await worker.waitFor('environment default');
      workers.set(id, worker);
    }
    const bus = await NatsBus.connect({ servers: nats.url });
    buses.push(bus);
    const api = new TurnloomClient(bus, { prefix });
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'have an essay written' } });

    // The child streams: kill the worker that holds it.
    let child = { threadId: '', turnId: '', holder: '' };
    let parentHolder = '';
    await expect
      .poll(
        async () => {
          const parent = (await api.call('thread.get', { threadId })).thread.turns[turnId];
          parentHolder = parent?.lease?.workerId ?? '';
          const part = parent?.messages[1].parts.find((candidate) => candidate.task);
          if (!part?.task) return false;
          const view = (await api.call('thread.get', { threadId: part.task.childThreadId })).thread;
          const turn = view.turns[view.turnIds[0] ?? ''];
          child = { threadId: view.id, turnId: turn?.id ?? '', holder: turn?.lease?.workerId ?? '' };
          return (turn?.messages[1].parts[0]?.text.length ?? 0) > 20 && child.holder !== '';
        },
        { timeout: 30_000, interval: 50 },
      )
      .toBe(true);
    const victim = killed === 'child' ? child.holder : parentHolder;
    await workers.get(victim)!.kill('SIGKILL');

    await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 60_000, interval: 100 }).toBe('completed');
    const childTurn = (await api.call('thread.get', { threadId: child.threadId })).thread.turns[child.turnId]!;
    expect(childTurn.state).toBe('completed');
    // Each turn the dead worker held was taken up by the one that lived, once.
    const survivor = victim === 'w1' ? 'w2' : 'w1';
    const holders = async (id: string) =>
      (await api.call('thread.events', { threadId: id, after: 0 })).events.filter(({ event }) => event.type === 'turn.leased').map(({ event }) => (event as { workerId: string }).workerId);
    expect(await holders(child.threadId)).toEqual(child.holder === victim ? [victim, survivor] : [child.holder]);
    expect(await holders(threadId)).toEqual(parentHolder === victim ? [victim, survivor] : [parentHolder]);

    // The parent got one child and one result for its call, the child's answer.
    const { events } = await api.call('thread.events', { threadId, after: 0 });
    expect(events.filter(({ event }) => event.type === 'task.delegated')).toHaveLength(1);
    expect(events.filter(({ event }) => event.type === 'task.settled')).toHaveLength(1);
    const results = events.filter(({ event }) => event.type === 'tool.result' || event.type === 'tool.failed').map(({ event }) => event);
    expect(results).toHaveLength(1);
    expect((results[0] as { output: string }).output.startsWith(essay.slice(0, 60))).toBe(true);
    expect((await api.call('thread.list', {})).threads.map((summary) => summary.id).sort()).toEqual([child.threadId, threadId].sort());
  }, 120_000);
});
