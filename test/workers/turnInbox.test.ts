import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { OpenAiChatProvider } from '../../adapters/providers/openaiChatProvider.ts';
import { type RecordedStreamServer, parseChunks, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { Bus, StoredEvent, ToolExecutor } from '../../domain/index.ts';
import { type TurnloomServer, type TurnloomServerOptions, startTurnloomServer } from '../../services/turnloomServer.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { fixturesDir } from '../support/fixtureOracle.ts';
import { tempDir } from '../support/tempDir.ts';

const chunks = (name: string) => parseChunks(readFileSync(`${fixturesDir}openai-chat/${name}`, 'utf8'));

/** A tool that runs until the test lets it finish: a long build, say. */
function gatedWeather() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const tool: ToolExecutor = {
    specs: () => [{ name: 'weather', description: 'Current weather for a place', inputSchema: { type: 'object', properties: { location: { type: 'string' } } } }],
    classify: (call) => ({ kind: 'read', subject: call.name }),
    execute: async (call) => {
      await released;
      return { output: `18°C and sunny in ${(call.input as { location: string }).location}`, isError: false };
    },
  };
  return { tool, release };
}

let http: RecordedStreamServer | undefined;
let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  await http?.close();
  fx = http = undefined;
});

const turnOf = async (client: TurnloomClient, threadId: string, turnId: string) => (await client.call('thread.get', { threadId })).thread.turns[turnId];
const settled = (state: string | undefined) => state === 'completed' || state === 'failed' || state === 'interrupted';

async function allEvents(client: TurnloomClient, threadId: string): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for (;;) {
    const page = await client.call('thread.events', { threadId, after: events.at(-1)?.threadSeq ?? 0, limit: 500 });
    events.push(...(page.events as StoredEvent[]));
    if (page.events.length < 500) return events;
  }
}

/** Each turn's events lie between its `turn.requested` and its settle, with no other turn's inside. */
function turnsInLogOrder(events: readonly StoredEvent[]): string[] {
  const order: string[] = [];
  let open: string | null = null;
  for (const { event } of events) {
    if (event.type === 'turn.requested') {
      expect(open).toBeNull();
      open = event.turnId;
      order.push(event.turnId);
    } else if ('turnId' in event && event.turnId !== null) {
      expect(event.turnId).toBe(open);
      if (event.type === 'turn.completed' || event.type === 'turn.failed' || event.type === 'turn.interrupted') open = null;
    }
  }
  return order;
}

describe('the turn inbox: input given while a turn runs', () => {
  it('steers input into a turn during a long tool run: the next step claims it, and its request carries it', async () => {
    http = await serveRecordedStream('openai-chat', [
      { kind: 'stream', chunks: chunks('deepseek-tool-call.chunks.txt') },
      { kind: 'stream', chunks: chunks('openai-text.chunks.txt') },
    ]);
    const weather = gatedWeather();
    // The requests counted are the turn's; a title asked after it would be one more.
    fx = await openApiFixture({ providers: { 'openai-chat': new OpenAiChatProvider({ baseURL: http.baseURL, defaultModel: 'deepseek-reasoner', tools: weather.tool }) }, localWorker: { sideWork: false } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'Weather in San Francisco?' }, provider: { name: 'openai-chat' } });
    await expect.poll(async () => (await turnOf(client, threadId, turnId))?.messages[1].parts.find((part) => part.tool)?.state, { timeout: 20_000 }).toBe('running.tool.executing');

    const steer = await client.call('turn.start', { threadId, input: { text: 'Give it in Fahrenheit too.' }, whileRunning: 'steer' });
    expect(steer).toMatchObject({ inbox: 'steered', turnId });
    if (steer.inbox !== 'steered') return;
    // Waiting, not claimed: the step that is running its tools is not disturbed.
    expect((await turnOf(client, threadId, turnId))!.inbox).toEqual([{ id: steer.inputId, text: 'Give it in Fahrenheit too.', at: expect.any(Number), claimedInStep: null }]);
    weather.release();
    await expect.poll(async () => (await turnOf(client, threadId, turnId))?.state, { timeout: 20_000 }).toBe('completed');

    const second = http.requests[1]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(second.messages.at(-2)).toMatchObject({ role: 'tool', content: '18°C and sunny in San Francisco' });
    expect(second.messages.at(-1)).toEqual({ role: 'user', content: 'Give it in Fahrenheit too.' });
    const turn = (await turnOf(client, threadId, turnId))!;
    expect(turn.inbox[0]!.claimedInStep).toBe(2);
    expect(turn.messages[0].parts.map((part) => [part.text, part.step])).toEqual([
      ['Weather in San Francisco?', 0],
      ['Give it in Fahrenheit too.', 2],
    ]);
    const claims = (await allEvents(client, threadId)).filter(({ event }) => event.type === 'input.claimed' || event.type === 'step.started').map(({ event }) => event.type);
    expect(claims).toEqual(['step.started', 'input.claimed', 'step.started']);
    expect(http.requests).toHaveLength(2);
  });

  it('runs one more step when input was steered in while the model gave what would have been its last answer', async () => {
    http = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: chunks('openai-text.chunks.txt'), delayMs: 5 }]);
    // As above: only the turn's requests.
    fx = await openApiFixture({ providers: { 'openai-chat': new OpenAiChatProvider({ baseURL: http.baseURL, defaultModel: 'gpt-test' }) }, localWorker: { sideWork: false } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'Tell me a story.' }, provider: { name: 'openai-chat' } });
    await expect.poll(async () => (await turnOf(client, threadId, turnId))?.messages[1].parts[0]?.text.length ?? 0, { timeout: 20_000 }).toBeGreaterThan(0);
    const steer = await client.call('turn.start', { threadId, input: { text: 'Make it shorter.' }, whileRunning: 'steer' });
    expect(steer.inbox).toBe('steered');
    await expect.poll(async () => settled((await turnOf(client, threadId, turnId))?.state), { timeout: 20_000 }).toBe(true);

    const turn = (await turnOf(client, threadId, turnId))!;
    expect([turn.state, turn.error]).toEqual(['completed', null]);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['stop', 'stop']);
    expect(http.requests).toHaveLength(2);
    const second = http.requests[1]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(second.messages.slice(1).map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(second.messages.at(-1)).toEqual({ role: 'user', content: 'Make it shorter.' });
    expect((await client.call('thread.get', { threadId })).thread.turnIds).toEqual([turnId]);
  });

  it('runs one more step for input a client steers in after the model stopped, before the turn completed', async () => {
    http = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: chunks('openai-text.chunks.txt') }]);
    // Holds the worker between the model's stop and its look at the inbox, so the steer lands exactly there.
    let stopped!: () => void;
    const modelStopped = new Promise<void>((resolve) => (stopped = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let pauses = 0;
    const pause = { name: 'pause', run: async () => (pauses++ === 0 ? (stopped(), await released) : undefined) };
    fx = await openApiFixture({ providers: { 'openai-chat': new OpenAiChatProvider({ baseURL: http.baseURL, defaultModel: 'gpt-test' }) }, localWorker: { hooks: { turnStopping: [pause] } } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'Tell me a story.' }, provider: { name: 'openai-chat' } });
    await modelStopped;
    try {
      expect((await turnOf(client, threadId, turnId))!.state).toBe('running.responded');
      expect(await client.call('turn.start', { threadId, input: { text: 'Now a shorter one.' }, whileRunning: 'steer' })).toMatchObject({ inbox: 'steered', turnId });
    } finally {
      release();
    }
    await expect.poll(async () => settled((await turnOf(client, threadId, turnId))?.state), { timeout: 20_000 }).toBe(true);
    const turn = (await turnOf(client, threadId, turnId))!;
    expect([turn.state, turn.steps.length]).toEqual(['completed', 2]);
    expect((http.requests[1]!.body as { messages: Array<{ role: string; content: unknown }> }).messages.at(-1)).toEqual({ role: 'user', content: 'Now a shorter one.' });
  });

  it('queues turns two clients start while one runs, and runs them after it in the order the log accepted them, never mixed', async () => {
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider({ chunkSize: 8, delayMs: 10, steps: [[{ text: 'A reply that takes a little while to type out.' }]] }) } });
    const [alice, bob] = [await fx.client(), await fx.client()];
    const { threadId } = await alice.call('thread.create', {});
    const first = await alice.call('turn.start', { threadId, input: { text: 'first' } });
    expect(first.inbox).toBe('started');
    const [a, b] = await Promise.all([alice.call('turn.start', { threadId, input: { text: 'from alice' } }), bob.call('turn.start', { threadId, input: { text: 'from bob' } })]);
    expect([a.inbox, b.inbox]).toEqual(['queued', 'queued']);
    expect((await alice.call('thread.get', { threadId })).thread.queue).toHaveLength(2);

    await expect.poll(async () => settled((await turnOf(alice, threadId, a.turnId))?.state) && settled((await turnOf(alice, threadId, b.turnId))?.state), { timeout: 30_000 }).toBe(true);
    const events = await allEvents(alice, threadId);
    const queuedOrder = events.flatMap(({ event }) => (event.type === 'turn.queued' ? [event.queuedTurnId] : []));
    expect(turnsInLogOrder(events)).toEqual([first.turnId, ...queuedOrder]);
    const { thread } = await alice.call('thread.get', { threadId });
    expect(thread.queue).toEqual([]);
    for (const [id, text] of [[a.turnId, 'from alice'], [b.turnId, 'from bob']] as const) {
      expect(thread.turns[id]!.state).toBe('completed');
      expect(thread.turns[id]!.messages[0].parts.map((part) => part.text)).toEqual([text]);
    }
  });

  it('interrupts the open turn and starts the new one only after it settled', async () => {
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider({ chunkSize: 4, delayMs: 20, steps: [[{ text: 'A long answer that the user will cut short. '.repeat(12) }]] }) } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId: firstId } = await client.call('turn.start', { threadId, input: { text: 'go on at length' } });
    await expect.poll(async () => (await turnOf(client, threadId, firstId))?.messages[1].parts[0]?.text.length ?? 0, { timeout: 20_000 }).toBeGreaterThan(8);
    const replace = await client.call('turn.start', { threadId, input: { text: 'actually, do this instead' }, whileRunning: 'interrupt' });
    expect(replace).toMatchObject({ inbox: 'queued', interrupted: firstId });
    await expect.poll(async () => (await turnOf(client, threadId, replace.turnId))?.state, { timeout: 30_000 }).toBe('completed');

    const events = await allEvents(client, threadId);
    const firstSettled = events.findIndex(({ event }) => event.type === 'turn.interrupted' && event.turnId === firstId);
    const secondRequested = events.findIndex(({ event }) => event.type === 'turn.requested' && event.turnId === replace.turnId);
    expect(firstSettled).toBeGreaterThan(-1);
    expect(secondRequested).toBeGreaterThan(firstSettled);
    expect(turnsInLogOrder(events)).toEqual([firstId, replace.turnId]);
  });
});

/** An input of `size` characters that says which it is. */
const inputOf = (name: string, size: number) => `${name}: `.padEnd(size, 'x');

describe('the turn inbox: how much may wait', () => {
  let server: TurnloomServer | undefined;
  let folder: { path: string; remove: () => void } | undefined;
  const buses: Bus[] = [];
  afterEach(async () => {
    await server?.stop();
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
    folder?.remove();
    server = folder = undefined;
  });

  /** A server on one data folder that can be stopped and started again on it, as a restart does. */
  async function serve(options: Partial<Omit<TurnloomServerOptions, 'bus' | 'store'>> = {}): Promise<TurnloomClient> {
    folder ??= tempDir('turnloom-inbox-');
    const hub = new InProcessHub();
    const [serverBus, clientBus] = [hub.connect(), hub.connect()];
    buses.push(serverBus, clientBus);
    server = await startTurnloomServer({ ...options, bus: serverBus, store: LmdbStore.open(folder.path), prefix: 'inbox' });
    return new TurnloomClient(clientBus, { prefix: 'inbox' });
  }

  it('runs queued turns after a restart in order, each with its whole input, and the model receives all of it', async () => {
    // No worker yet: the first turn stays requested and the others queue behind it.
    let client = await serve();
    const { threadId } = await client.call('thread.create', {});
    const texts = ['first', 'second', 'third', 'fourth'].map((name) => inputOf(name, 100_000));
    const started = [];
    for (const text of texts) started.push(await client.call('turn.start', { threadId, input: { text }, provider: { name: 'openai-chat' } }));
    expect(started.map(({ inbox }) => inbox)).toEqual(['started', 'queued', 'queued', 'queued']);
    await server!.stop();

    http = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: chunks('openai-text.chunks.txt') }]);
    client = await serve({ providers: { 'openai-chat': new OpenAiChatProvider({ baseURL: http.baseURL, defaultModel: 'gpt-test' }) }, localWorker: { sideWork: false } });
    const last = started.at(-1)!.turnId;
    await expect.poll(async () => (await turnOf(client, threadId, last))?.state, { timeout: 30_000 }).toBe('completed');
    const { thread } = await client.call('thread.get', { threadId });
    expect(thread.turnIds).toEqual(started.map(({ turnId }) => turnId));
    expect(thread.turnIds.map((id) => thread.turns[id]!.messages[0].parts[0]!.text)).toEqual(texts);
    expect(http.requests.map((request) => (request.body as { messages: Array<{ role: string; content: unknown }> }).messages.at(-1))).toEqual(texts.map((content) => ({ role: 'user', content })));
  });

  it('answers thread.get with a queue of large inputs: the thread keeps a short entry of each, and the log the whole text', async () => {
    const client = await serve();
    const { threadId } = await client.call('thread.create', {});
    await client.call('turn.start', { threadId, input: { text: 'the open turn' } });
    // 800 KB of queued text: more than one answer may carry (512 KiB by default).
    const queued = [];
    for (let i = 0; i < 8; i++) queued.push(await client.call('turn.start', { threadId, input: { text: inputOf(`q${i}`, 100_000) } }));
    const { thread } = await client.call('thread.get', { threadId });
    expect(thread.queue.map(({ turnId, bytes }) => [turnId, bytes])).toEqual(queued.map(({ turnId }) => [turnId, 100_000]));
    const entry = thread.queue[3]!;
    expect(entry.preview).toBe(inputOf('q3', 120));
    const [logged] = (await client.call('thread.events', { threadId, after: entry.seq - 1, limit: 1 })).events as StoredEvent[];
    expect(logged!.event).toMatchObject({ type: 'turn.queued', queuedTurnId: entry.turnId, input: { text: inputOf('q3', 100_000) } });
  });

  it('refuses a turn.start past the limits with queue_full, which changes nothing', async () => {
    const client = await serve({ queue: { maxTurns: 2 } });
    const { threadId } = await client.call('thread.create', {});
    const open = await client.call('turn.start', { threadId, input: { text: 'the open turn' } });
    for (const text of ['one', 'two']) await client.call('turn.start', { threadId, input: { text } });
    const before = await client.call('thread.get', { threadId });
    await expect(client.call('turn.start', { threadId, input: { text: 'three' } })).rejects.toMatchObject({ code: 'queue_full', details: { threadId, waiting: 2, maxTurns: 2 } });
    await expect(client.call('turn.start', { threadId, input: { text: 'three' }, whileRunning: 'interrupt' })).rejects.toMatchObject({ code: 'queue_full' });
    const after = await client.call('thread.get', { threadId });
    expect([after.seq, after.thread.queue, after.thread.turns[open.turnId]!.state]).toEqual([before.seq, before.thread.queue, 'requested']);
  });
});
