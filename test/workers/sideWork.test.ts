import { afterEach, describe, expect, inject, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import type { TurnloomClient } from '../../client/index.ts';
import type { ActivityView, ProviderAdapter, ProviderEvent, ProviderRequest, StoredEvent } from '../../domain/index.ts';
import { Worker, type WorkerOptions } from '../../services/worker/worker.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';

const natsUrl = inject('natsUrl');
const done: ScriptInput = { steps: [[{ text: 'Done.' }]] };

/** A side call as the provider saw it: its request, its abort signal, and whether its stream has ended. */
interface SideCall {
  request: ProviderRequest;
  signal: AbortSignal;
  ended: boolean;
}

/** The scripted provider, with every side call seen, and held until `gate` opens (a turn's steps are not held). */
function watched(inner: ScriptedProvider, gate: Promise<void> = Promise.resolve()): ProviderAdapter & { sideCalls: SideCall[] } {
  const sideCalls: SideCall[] = [];
  return {
    name: inner.name,
    tools: inner.tools,
    sideCalls,
    async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
      if (!request.sideWork) return yield* inner.stream(request, signal);
      const call: SideCall = { request, signal, ended: false };
      sideCalls.push(call);
      try {
        await gate;
        yield* inner.stream(request, signal);
      } finally {
        call.ended = true;
      }
    },
  };
}

let fx: ApiFixture | undefined;
let ws: WorkspaceFixture | undefined;
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
  await fx?.dispose();
  await ws?.dispose();
  fx = ws = undefined;
});

/** An engine on the run's nats-server, and one worker of its own reaching it only through NATS. */
async function serve(adapter: ProviderAdapter, options: Partial<WorkerOptions> = {}): Promise<{ worker: Worker; client: TurnloomClient }> {
  fx = await openApiFixture({ natsUrl });
  const worker = await new Worker({ bus: await fx.connect(), prefix: fx.prefix, workerId: 'w1', adapterFor: () => adapter, stopGraceMs: 300, ...options }).start();
  workers.push(worker);
  return { worker, client: await fx.client() };
}

const threadOf = async (client: TurnloomClient, threadId: string) => (await client.call('thread.get', { threadId })).thread;
const sideActivities = async (client: TurnloomClient, threadId: string, kind: ActivityView['kind']) => (await threadOf(client, threadId)).activities.filter((activity) => activity.kind === kind);

async function completedTurn(client: TurnloomClient, threadId: string, text: string): Promise<string> {
  const { turnId } = await client.call('turn.start', { threadId, input: { text } });
  await expect.poll(async () => (await threadOf(client, threadId)).turns[turnId]!.state, { timeout: 20_000 }).toBe('completed');
  return turnId;
}

async function allEvents(client: TurnloomClient, threadId: string): Promise<StoredEvent[]> {
  return (await client.call('thread.events', { threadId, after: 0 })).events;
}

describe('side work on the worker that ran the turn, over NATS', () => {
  it('titles the thread after its first completed turn, after the turn settled, and records the call', async () => {
    const { worker, client } = await serve(new ScriptedProvider({ ...done, model: 'scripted-titles' }));
    const { threadId } = await client.call('thread.create', {});
    const first = await completedTurn(client, threadId, 'please fix the flaky login test on the CI runners today');
    await expect.poll(async () => (await threadOf(client, threadId)).title, { timeout: 10_000 }).toBe('Please fix the flaky login test on the');

    const events = await allEvents(client, threadId);
    const settledAt = events.findIndex(({ event }) => event.type === 'turn.completed' && event.turnId === first);
    const recordedAt = events.findIndex(({ event }) => event.type === 'activity.recorded' && event.kind === 'sideWork.title');
    const renamedAt = events.findIndex(({ event }) => event.type === 'thread.renamed');
    expect(settledAt).toBeGreaterThan(0);
    expect(recordedAt).toBeGreaterThan(settledAt);
    expect(renamedAt).toBeGreaterThan(recordedAt);
    expect(events[recordedAt]!.event).toMatchObject({
      turnId: null,
      data: { turnId: first, workerId: 'w1', model: 'scripted-titles', outcome: 'applied', text: 'Please fix the flaky login test on the', usage: { input: expect.any(Number), output: expect.any(Number) } },
    });

    await completedTurn(client, threadId, 'and the signup test too');
    await worker.idle();
    expect(await sideActivities(client, threadId, 'sideWork.title')).toHaveLength(1);
    expect((await threadOf(client, threadId)).title).toBe('Please fix the flaky login test on the');
  });

  it('settles the turn without waiting for side work, and keeps the title a person gave meanwhile', async () => {
    let open = () => {};
    const adapter = watched(new ScriptedProvider(done), new Promise<void>((resolve) => (open = resolve)));
    const { client } = await serve(adapter);
    const { threadId } = await client.call('thread.create', {});
    // Completes while its side call is held.
    const turnId = await completedTurn(client, threadId, 'fix the login race');
    await expect.poll(() => adapter.sideCalls.length, { timeout: 10_000 }).toBe(1);
    await client.call('thread.rename', { threadId, title: 'Login race, by hand' });
    open();

    await expect.poll(async () => (await sideActivities(client, threadId, 'sideWork.title')).length, { timeout: 10_000 }).toBe(1);
    const [activity] = await sideActivities(client, threadId, 'sideWork.title');
    expect(activity!.data).toMatchObject({ turnId, outcome: 'skipped', text: 'Fix the login race', reason: expect.stringContaining('renamed') });
    expect((await threadOf(client, threadId)).title).toBe('Login race, by hand');
    const renames = (await allEvents(client, threadId)).flatMap(({ event }) => (event.type === 'thread.renamed' ? [event.title] : []));
    expect(renames).toEqual(['Login race, by hand']);
  });

  it('runs side work for many turns at once without a listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      let open = () => {};
      const adapter = watched(new ScriptedProvider(done), new Promise<void>((resolve) => (open = resolve)));
      const { client } = await serve(adapter);
      const threads = await Promise.all(Array.from({ length: 14 }, () => client.call('thread.create', {})));
      await Promise.all(threads.map(({ threadId }) => completedTurn(client, threadId, 'fix the login race')));
      // Every side call is held at once, each listening for the worker's stop.
      await expect.poll(() => adapter.sideCalls.length, { timeout: 20_000 }).toBe(14);
      open();
      await Promise.all(threads.map(({ threadId }) => expect.poll(async () => (await sideActivities(client, threadId, 'sideWork.title')).length, { timeout: 20_000 }).toBe(1)));
      expect(warnings.filter((warning) => warning.includes('MaxListenersExceeded'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('records a provider failure as an activity; the turn stays completed and the worker goes on', async () => {
    const { client } = await serve(new ScriptedProvider({ ...done, sideWork: { title: [{ error: { kind: 'server', message: 'the title model is down' } }] } }));
    const { threadId } = await client.call('thread.create', {});
    const first = await completedTurn(client, threadId, 'fix the login race');
    await expect.poll(async () => (await sideActivities(client, threadId, 'sideWork.title')).length, { timeout: 10_000 }).toBe(1);
    const [activity] = await sideActivities(client, threadId, 'sideWork.title');
    expect(activity!.data).toMatchObject({ turnId: first, outcome: 'failed', error: 'server: the title model is down', text: null });
    const thread = await threadOf(client, threadId);
    expect(thread.title).toBe('New thread');
    expect(thread.turns[first]).toMatchObject({ state: 'completed', error: null, activities: [] });
    await completedTurn(client, threadId, 'try once more');
    expect((await client.call('worker.list', {})).workers.map((listed) => [listed.workerId, listed.live])).toEqual([['w1', true]]);
  });

  it('fails a side call that does not answer in time', async () => {
    const { client } = await serve(new ScriptedProvider({ ...done, sideWork: { title: [{ wait: 30_000 }, { text: 'Too late' }] } }), { sideWork: { timeoutMs: 200 } });
    const { threadId } = await client.call('thread.create', {});
    await completedTurn(client, threadId, 'fix the login race');
    await expect.poll(async () => (await sideActivities(client, threadId, 'sideWork.title')).map((activity) => activity.data.error), { timeout: 10_000 }).toEqual(['no answer in 200 ms']);
    expect((await threadOf(client, threadId)).title).toBe('New thread');
  });

  it('stops with the worker: the side call is aborted and ends, nothing is written after, no rejection is left unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const adapter = watched(new ScriptedProvider({ ...done, sideWork: { title: [{ wait: 60_000 }, { text: 'Never' }] } }));
      const { worker, client } = await serve(adapter);
      const { threadId } = await client.call('thread.create', {});
      await completedTurn(client, threadId, 'fix the login race');
      await expect.poll(() => adapter.sideCalls.length, { timeout: 10_000 }).toBe(1);
      const seq = (await threadOf(client, threadId)).seq;

      await worker.stop();
      expect(adapter.sideCalls[0]!.signal.aborted).toBe(true);
      expect(adapter.sideCalls[0]!.ended).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await threadOf(client, threadId)).seq).toBe(seq);
      expect(await sideActivities(client, threadId, 'sideWork.title')).toEqual([]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('stops even when the provider ignores the abort', async () => {
    let asked = 0;
    const hanging: ProviderAdapter = {
      name: 'hanging',
      async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
        if (!request.sideWork) return yield* new ScriptedProvider(done).stream(request, signal);
        asked += 1;
        await new Promise(() => {});
      },
    };
    const { worker, client } = await serve(hanging);
    const { threadId } = await client.call('thread.create', {});
    await completedTurn(client, threadId, 'fix the login race');
    await expect.poll(() => asked, { timeout: 10_000 }).toBe(1);
    await worker.stop();
    await worker.idle();
    expect(await sideActivities(client, threadId, 'sideWork.title')).toEqual([]);
  });
});

describe('side work: a summary of each turn that changed files', () => {
  it('summarises a changing turn from its checkpoint diff, in one line; a turn that changed nothing gets none', async () => {
    ws = await openWorkspaceFixture(
      (request) => (request.messages.some((message) => message.role === 'user' && message.text === 'write b') ? toolSteps({ name: 'write', input: { path: 'b.txt', content: 'one\ntwo\n' } })(request) : toolSteps()(request)),
      { natsUrl },
    );
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId: changing } = await ws.client.call('turn.start', { threadId, input: { text: 'write b' } });
    expect((await ws.settled(threadId, changing)).state).toBe('completed');
    await expect.poll(async () => (await ws!.turn(threadId, changing)).summary, { timeout: 10_000 }).toBe('Changed b.txt (+2 −0)');

    const { turnId: reading } = await ws.client.call('turn.start', { threadId, input: { text: 'look around' } });
    expect((await ws.settled(threadId, reading)).state).toBe('completed');
    await ws.fx.server.worker!.idle();
    expect((await ws.turn(threadId, reading)).summary).toBeNull();
    const summaries = (await ws.client.call('thread.get', { threadId })).thread.activities.filter((activity) => activity.kind === 'sideWork.summary');
    expect(summaries.map((activity) => [activity.data.turnId, activity.data.outcome])).toEqual([[changing, 'applied']]);
  });
});
