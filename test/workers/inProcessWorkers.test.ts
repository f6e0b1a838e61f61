import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, subjects } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { HelloAnswer } from '../../services/dispatch/workerProtocol.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { Worker, type WorkerOptions } from '../../services/worker/worker.ts';
import { WorkerLink } from '../../services/worker/workerLink.ts';
import { tempDir } from '../support/tempDir.ts';

const slowText = 'A long answer streamed slowly, chunk by chunk, so that the worker can be cut off while it types. '.repeat(3);

/** The same worker protocol on the in-process bus: engine and workers in one process, each on its own connection. */
describe('workers on the in-process bus', () => {
  const dir = tempDir('turnloom-inproc-workers-');
  let hub: InProcessHub;
  let server: TurnloomServer | undefined;
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.stop()));
    await server?.stop();
    server = undefined;
    dir.remove();
  });

  const serve = async () => {
    server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), workers: { leaseTimeoutMs: 600 } });
    return server;
  };
  const worker = async (workerId: string, script: ScriptInput, options: Partial<WorkerOptions> = {}) => {
    const bus = hub.connect();
    const started = await new Worker({ bus, workerId, adapterFor: () => new ScriptedProvider(script), stopGraceMs: 300, ...options }).start();
    workers.push(started);
    return { worker: started, bus };
  };
  const turnOf = async (api: TurnloomClient, threadId: string, turnId: string) => (await api.call('thread.get', { threadId })).thread.turns[turnId]!;

  it('runs a turn on a worker that is not the engine’s', async () => {
    hub = new InProcessHub();
    await serve();
    await worker('w1', { steps: [[{ text: 'Looking.' }, { toolCall: { name: 'probe', result: 'fine' } }], [{ text: 'All fine.' }]] });
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'hello' } });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    expect((await turnOf(api, threadId, turnId)).lease).toBeNull();
    expect((await api.call('worker.list', {})).workers.map((listed) => [listed.workerId, listed.live])).toEqual([['w1', true]]);
  });

  it('runs a thread’s turns only on workers of its environment; until one is there, the turn waits and thread.get says so', async () => {
    hub = new InProcessHub();
    await serve();
    await worker('cpu', { steps: [[{ text: 'from the default environment' }]] });
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', { environment: 'gpu' });
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'train it' } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await api.call('thread.get', { threadId })).work).toEqual({ turnId, environment: 'gpu', heldBy: null, liveWorkers: 0 });
    expect((await turnOf(api, threadId, turnId)).state).toBe('requested');
    await worker('gpu-1', { steps: [[{ text: 'from the gpu environment' }]] }, { environment: 'gpu' });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    expect((await turnOf(api, threadId, turnId)).messages[1].parts[0]!.text).toBe('from the gpu environment');
  });

  it('resumes a turn on another worker when the first is cut off, and fences the first', async () => {
    hub = new InProcessHub();
    await serve();
    const slow: ScriptInput = { chunkSize: 4, delayMs: 20, steps: [[{ text: slowText }]] };
    const first = await worker('w1', slow);
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'talk' } });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).messages[1].parts[0]?.text.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(20);
    // Cut off: its connection is gone, as a partitioned or killed worker's would be.
    await first.bus.close();
    await worker('w2', slow);
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 20_000 }).toBe('completed');
    const turn = await turnOf(api, threadId, turnId);
    expect(turn.leases).toBe(2);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['interrupted', 'stop']);
    expect(turn.messages[1].parts.at(-1)!.text).toBe(slowText);
  });

  it('keeps going while the engine restarts, and a pending approval is answered after it', async () => {
    hub = new InProcessHub();
    await serve();
    await worker('w1', { steps: [[{ toolCall: { name: 'deploy', approval: true, result: 'deployed' } }], [{ text: 'Deployed.' }]] });
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'ship it' } });
    await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.length, { timeout: 10_000 }).toBe(1);
    await server!.stop();
    server = undefined;
    await serve();
    const [approval] = (await api.call('approval.list', { threadId })).approvals;
    await api.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 10_000 }).toBe('completed');
    expect(await turnOf(api, threadId, turnId)).toMatchObject({ leases: 1, approvals: [expect.objectContaining({ state: 'consumed' })] });
  });

  it('refuses a record from a worker whose lease was taken away, or whose key is wrong, and changes nothing', async () => {
    hub = new InProcessHub();
    const { engine } = await serve();
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'hello' } });
    const link = new WorkerLink(hub.connect(), subjects(), 'default');
    const hello = { workerId: 'manual', environment: 'default', workspace: null, host: 'here', pid: 1, capacity: 1, running: [] };
    await link.call<HelloAnswer>('hello', hello);
    const key = 'a-key-only-this-worker-knows';
    const { token } = await link.call<{ token: number }>('claim', { workerId: 'manual', threadId, turnId, claimId: 'c1', keyHash: createHash('sha256').update(key).digest('hex') });
    const write = (withToken: number, withKey: string, seq: number) =>
      link.call('record', { workerId: 'manual', threadId, turnId, token: withToken, key: withKey, seq, events: [{ type: 'turn.started', turnId }] });
    await expect(write(token, 'not-the-key-0000000000', 1)).rejects.toMatchObject({ code: 'fenced' });
    await engine.submit({ type: 'turn.expireLease', commandId: 'taken-away', threadId, turnId, token, reason: 'test', maxResumes: 2 });
    const seq = (await engine.getThread(threadId)).seq;
    await expect(write(token, key, 2)).rejects.toMatchObject({ code: 'fenced' });
    expect((await engine.getThread(threadId)).seq).toBe(seq);
    // Worker messages are network input: a malformed one is refused by its schema.
    await expect(link.call('record', { workerId: 'manual', threadId, turnId, token, key, seq: 3, events: [{ type: 'turn.leased', turnId }] })).rejects.toMatchObject({ code: 'invalid_payload' });
  });

  it('fails a turn whose writes pile up past the bound while the engine is away, and says so when it is back', async () => {
    hub = new InProcessHub();
    await serve();
    await worker('w1', { chunkSize: 2, delayMs: 10, steps: [[{ wait: 300 }, { text: slowText }]] }, { outbox: { maxEvents: 5 }, loop: { flushMs: 50 } });
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'talk' } });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 10_000 }).toBe('running.streaming');
    await server!.stop();
    server = undefined;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await serve();
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 15_000 }).toBe('failed');
    expect((await turnOf(api, threadId, turnId)).error).toMatch(/engine was unreachable while \d+ events/);
  });
});
