import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { ProviderRequest, StoredEvent } from '../../domain/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { Worker, type WorkerOptions } from '../../services/worker/worker.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { tempDir } from '../support/tempDir.ts';

const overflow = { error: { kind: 'contextOverflow' as const, message: 'prompt is too long: 210000 tokens > 200000 maximum' } };
const isSummaryCall = (request: ProviderRequest) => request.system.startsWith('You compact the conversation');
const compacted = (request: ProviderRequest) => request.messages[0]?.role === 'user' && request.messages[0].text.startsWith('Summary of the earlier conversation');
const lastUser = (request: ProviderRequest) => [...request.messages].reverse().find((message) => message.role === 'user');

/**
 * A model whose window the third turn overflows: it answers the first two
 * turns, summarises when asked, and overflows on the third until the context
 * it reads is compacted (or, with `always`, whatever it reads).
 */
function overflowingModel(options: { always?: boolean } = {}) {
  const requests: ProviderRequest[] = [];
  const provider = new ScriptedProvider((request): ScriptInput => {
    requests.push(request);
    if (isSummaryCall(request)) return { steps: [[{ text: `SUMMARY of ${request.messages.length - 1} messages` }]] };
    const user = lastUser(request);
    const third = request.messages.some((message) => message.role === 'user' && message.text === 'third');
    if (third && (options.always || !compacted(request))) return { steps: [[overflow]] };
    return { steps: [[{ text: `answer to ${user?.role === 'user' ? user.text : '?'}` }]] };
  });
  return { provider, requests };
}

let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

async function runTurns(client: TurnloomClient, threadId: string, texts: string[]) {
  const ids: string[] = [];
  for (const text of texts) {
    const { turnId } = await client.call('turn.start', { threadId, input: { text } });
    ids.push(turnId);
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]?.state, { timeout: 20_000 }).toMatch(/^(completed|failed|interrupted)$/);
  }
  return ids;
}

const eventsOf = async (client: TurnloomClient, threadId: string) => (await client.call('thread.events', { threadId, after: 0, limit: 1_000 })).events as StoredEvent[];

describe('compaction', () => {
  it('compacts once on a context overflow, and the turn completes reading the summary and the recent turn verbatim', async () => {
    const model = overflowingModel();
    fx = await openApiFixture({ providers: { scripted: model.provider } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const [first, second, third] = await runTurns(client, threadId, ['first', 'second', 'third']);
    const { thread } = await client.call('thread.get', { threadId });
    expect(thread.turns[third!]!.state).toBe('completed');
    expect(thread.turns[third!]!.compactions).toBe(1);
    expect(thread.session.state).toBe('ready');
    expect(thread.context).toMatchObject({ by: 'compaction', fromTurnId: second, fromStep: 0, summary: 'SUMMARY of 2 messages' });

    const types = (await eventsOf(client, threadId)).filter(({ event }) => 'turnId' in event && event.turnId === third).map(({ event }) => event.type);
    // The failed step closed, the compaction ran between steps, the hook's retry was noted, and the step ran again.
    expect(types.slice(types.indexOf('compaction.started') - 1, types.indexOf('context.compacted') + 3)).toEqual(['step.finished', 'compaction.started', 'context.compacted', 'activity.recorded', 'step.started']);
    // The summary call read turn one; the answering call reads the summary, then turn two and three verbatim.
    const summaryCall = model.requests.find(isSummaryCall)!;
    expect(summaryCall.messages.slice(0, 2)).toEqual([{ role: 'user', text: 'first' }, { role: 'assistant', parts: [{ kind: 'text', text: 'answer to first' }] }]);
    const answered = model.requests.at(-1)!;
    expect(answered.messages.map((message) => (message.role === 'user' ? message.text : message.role))).toEqual([
      'Summary of the earlier conversation (older turns were compacted):\nSUMMARY of 2 messages',
      'second',
      'assistant',
      'third',
    ]);
    expect(first).toBeDefined();
  });

  it('stops after two compactions in one turn when the overflow persists, saying so', async () => {
    const model = overflowingModel({ always: true });
    fx = await openApiFixture({ providers: { scripted: model.provider } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const [, , third] = await runTurns(client, threadId, ['first', 'second', 'third']);
    const turn = (await client.call('thread.get', { threadId })).thread.turns[third!]!;
    expect([turn.state, turn.compactions]).toEqual(['failed', 2]);
    expect(turn.error).toBe('the context window overflowed after 2 compactions, the most one turn may make');
    expect((await eventsOf(client, threadId)).filter(({ event }) => event.type === 'context.compacted')).toHaveLength(2);
    expect((await client.call('thread.get', { threadId })).thread.session.state).toBe('ready');
  });

  it('fails at once with the overflow when the thread has compaction off', async () => {
    const model = overflowingModel();
    fx = await openApiFixture({ providers: { scripted: model.provider } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', { compaction: 'off' });
    const [, , third] = await runTurns(client, threadId, ['first', 'second', 'third']);
    const turn = (await client.call('thread.get', { threadId })).thread.turns[third!]!;
    expect(turn.state).toBe('failed');
    expect(turn.error).toBe('the context window overflowed, and compaction is off for this thread');
    expect(model.requests.filter(isSummaryCall)).toHaveLength(0);
    expect((await eventsOf(client, threadId)).some(({ event }) => event.type === 'compaction.started')).toBe(false);
  });

  it('compacts before a request that would not fit the window it was given (--context-window)', async () => {
    const model = overflowingModel();
    fx = await openApiFixture({ providers: { scripted: model.provider }, runner: { compaction: { contextWindow: 12 } } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const [, , third] = await runTurns(client, threadId, ['first', 'second', 'third']);
    const events = await eventsOf(client, threadId);
    expect(events.filter(({ event }) => event.type === 'compaction.started').map(({ event }) => event.type === 'compaction.started' && event.reason)).toContain('window');
    expect((await client.call('thread.get', { threadId })).thread.turns[third!]!.state).toBe('completed');
  });
});

describe('a worker lost while compacting', () => {
  const dir = tempDir('turnloom-compaction-crash-');
  let server: TurnloomServer | undefined;
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await server?.stop();
    server = undefined;
    dir.remove();
  });

  it('leaves the session compacting no longer: the turn resumes on another worker, which compacts again and completes', async () => {
    const hub = new InProcessHub();
    server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), workers: { leaseTimeoutMs: 600 } });
    const api = new TurnloomClient(hub.connect());
    let summaryStarted = false;
    const slowSummary = new ScriptedProvider((request): ScriptInput => {
      if (isSummaryCall(request)) {
        summaryStarted = true;
        return { steps: [[{ wait: 60_000 }, { text: 'never' }]] };
      }
      const third = request.messages.some((message) => message.role === 'user' && message.text === 'third');
      return third && !compacted(request) ? { steps: [[overflow]] } : { steps: [[{ text: 'fine' }]] };
    });
    const start = async (workerId: string, adapter: ScriptedProvider, options: Partial<WorkerOptions> = {}) => {
      const bus = hub.connect();
      const worker = await new Worker({ bus, workerId, adapterFor: () => adapter, stopGraceMs: 300, ...options }).start();
      workers.push(worker);
      return bus;
    };
    const firstBus = await start('w1', slowSummary);
    const { threadId } = await api.call('thread.create', {});
    await runTurns(api, threadId, ['first', 'second']);
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'third' } });
    await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.session.state, { timeout: 20_000 }).toBe('compacting');
    expect(summaryStarted).toBe(true);
    await firstBus.close();

    await start('w2', overflowingModel().provider);
    await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]?.state, { timeout: 20_000 }).toBe('completed');
    const events = (await api.call('thread.events', { threadId, after: 0, limit: 1_000 })).events as StoredEvent[];
    const types = events.map(({ event }) => event.type);
    expect(types.indexOf('compaction.failed')).toBeGreaterThan(types.indexOf('turn.leaseLost'));
    expect(types.filter((type) => type === 'context.compacted')).toHaveLength(1);
    const { thread } = await api.call('thread.get', { threadId });
    expect([thread.session.state, thread.turns[turnId]!.compactions]).toEqual(['ready', 1]);
  });
});
