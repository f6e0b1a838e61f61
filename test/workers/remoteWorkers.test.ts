import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { Bus } from '../../domain/index.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';

const slowText = 'A long answer streamed slowly, chunk by chunk, so that a process can be killed while it is still being typed out. '.repeat(3);

/**
 * Engine and workers as separate processes on a real nats-server, each
 * started as a user would start it. Workers reach the engine only through
 * NATS subjects.
 */
describe('workers in their own processes, over NATS', () => {
  let nats: NatsServerHandle;
  const dir = tempDir('turnloom-remote-');
  const processes: CliProcess[] = [];
  const buses: Bus[] = [];
  let n = 0;
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((process) => process.kill('SIGKILL')));
    await Promise.all(buses.splice(0).map((bus) => bus.close()));
  });
  afterAll(async () => {
    await nats.dispose();
    dir.remove();
  });

  const script = (name: string, body: object) => {
    const path = join(dir.path, `${name}.json`);
    writeFileSync(path, JSON.stringify(body));
    return path;
  };
  const engine = (prefix: string, data: string, leaseTimeout = 2) => {
    const process = runCli(['serve', '--nats', nats.url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, data), '--lease-timeout', String(leaseTimeout)]);
    processes.push(process);
    return process;
  };
  const worker = (prefix: string, id: string, scriptPath: string) => {
    const process = runCli(['worker', '--nats', nats.url, '--workspace', dir.path, '--id', id, '--prefix', prefix, '--script', scriptPath]);
    processes.push(process);
    return process;
  };
  const client = async (prefix: string) => {
    const bus = await NatsBus.connect({ servers: nats.url });
    buses.push(bus);
    return new TurnloomClient(bus, { prefix });
  };
  const turnOf = async (api: TurnloomClient, threadId: string, turnId: string) => (await api.call('thread.get', { threadId })).thread.turns[turnId]!;
  const nextPrefix = () => `rw${process.pid}x${++n}`;

  it('runs a turn on a worker in another process; worker.list shows it', async () => {
    const prefix = nextPrefix();
    await engine(prefix, 'a').waitFor('data:');
    const api = await client(prefix);
    const { threadId } = await api.call('thread.create', {});
    // No worker yet: the turn is an accepted intent, and thread.get says it waits.
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'hello' } });
    expect((await api.call('thread.get', { threadId })).work).toEqual({ turnId, environment: 'default', heldBy: null, liveWorkers: 0 });
    const steps = [[{ text: 'Looking.' }, { toolCall: { name: 'probe', result: 'fine' } }], [{ text: 'All fine.' }]];
    await worker(prefix, 'w1', script('plain', { steps })).waitFor('environment default');
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 20_000 }).toBe('completed');
    const turn = await turnOf(api, threadId, turnId);
    expect(turn.leases).toBe(1);
    expect(turn.messages[1].parts.map((part) => part.text || part.tool?.output)).toEqual(['Looking.', 'fine', 'All fine.']);
    const { events } = await api.call('thread.events', { threadId, after: 0 });
    expect(events.find(({ event }) => event.type === 'turn.leased')?.event).toMatchObject({ workerId: 'w1' });
    const [listed] = (await api.call('worker.list', {})).workers;
    expect(listed).toMatchObject({ workerId: 'w1', environment: 'default', workspace: dir.path, live: true });
    expect(listed!.pid).toBe(processes.at(-1)!.child.pid);
  }, 90_000);

  it('resumes a turn on a second worker when the first is killed mid-stream', async () => {
    const prefix = nextPrefix();
    await engine(prefix, 'b').waitFor('data:');
    const api = await client(prefix);
    const slow = script('slow', { chunkSize: 4, delayMs: 40, steps: [[{ text: slowText }]] });
    const first = worker(prefix, 'w1', slow);
    await first.waitFor('environment default');
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'talk' } });
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).messages[1].parts[0]?.text.length ?? 0, { timeout: 20_000 }).toBeGreaterThan(20);
    await worker(prefix, 'w2', slow).waitFor('environment default');
    await first.kill('SIGKILL');
    await expect.poll(async () => (await turnOf(api, threadId, turnId)).state, { timeout: 40_000 }).toBe('completed');
    const turn = await turnOf(api, threadId, turnId);
    expect(turn.leases).toBe(2);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['interrupted', 'stop']);
    expect(turn.messages[1].parts.map((part) => part.state)).toEqual(['interrupted', 'completed']);
    expect(turn.messages[1].parts[1]!.text).toBe(slowText);
    expect(turn.activities.map((activity) => activity.message).join('\n')).toMatch(/worker w1 was lost/);
    const { events } = await api.call('thread.events', { threadId, after: 0 });
    expect(events.filter(({ event }) => event.type === 'turn.leased').map(({ event }) => (event as { workerId: string }).workerId)).toEqual(['w1', 'w2']);
  }, 90_000);

  it('keeps a pending approval through an engine SIGKILL: answered after the restart, the turn completes on the same worker', async () => {
    const prefix = nextPrefix();
    const first = engine(prefix, 'c', 10);
    await first.waitFor('data:');
    const api = await client(prefix);
    await worker(prefix, 'w1', script('approve', { steps: [[{ toolCall: { name: 'deploy', approval: true, result: 'deployed' } }], [{ text: 'Deployed.' }]] })).waitFor('environment default');
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'ship it' } });
    await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.length, { timeout: 20_000 }).toBe(1);
    await first.kill('SIGKILL');
    await engine(prefix, 'c', 10).waitFor('data:');
    // Another client, after the restart: the approval is still there, and answerable.
    const other = await client(prefix);
    const [approval] = (await other.call('approval.list', { threadId })).approvals;
    expect(approval).toMatchObject({ toolName: 'deploy' });
    await other.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await turnOf(other, threadId, turnId)).state, { timeout: 30_000 }).toBe('completed');
    const turn = await turnOf(other, threadId, turnId);
    expect(turn.leases).toBe(1);
    expect(turn.approvals[0]).toMatchObject({ state: 'consumed' });
    expect(turn.messages[1].parts.map((part) => part.tool?.output ?? part.text)).toEqual(['deployed', 'Deployed.']);
    expect(turn.activities.filter((activity) => activity.kind === 'repair')).toEqual([]);
  }, 90_000);

  it.each([
    ['killed -9', 'SIGKILL'],
    ['stopped with SIGTERM', 'SIGTERM'],
  ] as const)('serve %s with its local worker while an approval waits: restarted, answered from another client, the command runs exactly once', async (_how, signal) => {
    const prefix = nextPrefix();
    const workspace = tempDir('turnloom-serve-crash-');
    try {
      const deploy = script('deploy', { steps: [[{ text: 'Deploying.' }, { toolCall: { name: 'bash', input: { command: 'echo deployed >> deploys.txt' } } }], [{ text: 'Deployed.' }]] });
      // The engine and its local worker in one process, as `turnloom serve` runs by default; a lease clock far longer than the test.
      const serve = () => {
        const process = runCli(['serve', '--nats', nats.url, '--prefix', prefix, '--data', join(dir.path, 'd'), '--workspace', workspace.path, '--script', deploy, '--lease-timeout', '600']);
        processes.push(process);
        return process;
      };
      const first = serve();
      await first.waitFor('local worker');
      const api = await client(prefix);
      const { threadId } = await api.call('thread.create', {});
      const { turnId } = await api.call('turn.start', { threadId, input: { text: 'ship it' } });
      await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.length, { timeout: 20_000 }).toBe(1);
      // An orderly stop leaves the question open, as a crash does: it is not the model's fault, nor the person's, that the server went away.
      expect(await first.kill(signal)).toBe(signal === 'SIGTERM' ? 0 : null);

      await serve().waitFor('local worker');
      const other = await client(prefix);
      const [approval] = (await other.call('approval.list', { threadId })).approvals;
      expect(approval).toMatchObject({ toolName: 'bash', state: 'pending' });
      await other.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
      await expect.poll(async () => (await turnOf(other, threadId, turnId)).state, { timeout: 30_000 }).toBe('completed');
      const turn = await turnOf(other, threadId, turnId);
      expect(readFileSync(join(workspace.path, 'deploys.txt'), 'utf8')).toBe('deployed\n');
      expect(turn.approvals).toEqual([expect.objectContaining({ state: 'consumed' })]);
      // The dead process's worker held the turn; the new one took it at once (no lease timeout), in the same step.
      expect(turn.leases).toBe(2);
      expect(turn.steps.map((step) => step.outcome)).toEqual(['toolCalls', 'stop']);
      expect(turn.messages[1].parts.map((part) => [part.state, part.tool?.outcome ?? null])).toEqual([
        ['completed', null],
        ['completed', null],
        ['completed', null],
      ]);
      expect(turn.activities.map((activity) => activity.message).join('\n')).toMatch(/process of worker .* is gone/);
    } finally {
      workspace.remove();
    }
  }, 90_000);

  it('lets turns go on through a nats-server restart, and a client catches up', async () => {
    const own = await startNatsServer();
    try {
      const prefix = nextPrefix();
      const serve = runCli(['serve', '--nats', own.url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, 'e'), '--lease-timeout', '10']);
      const work = runCli(['worker', '--nats', own.url, '--workspace', dir.path, '--id', 'w1', '--prefix', prefix, '--script', script('slow2', { chunkSize: 8, delayMs: 40, steps: [[{ text: slowText }]] })]);
      processes.push(serve, work);
      await serve.waitFor('data:');
      await work.waitFor('environment default');
      const bus = await NatsBus.connect({ servers: own.url });
      buses.push(bus);
      const api = new TurnloomClient(bus, { prefix });
      const { threadId } = await api.call('thread.create', {});
      const watch = await api.watchThread(threadId, { pollMs: 500 });
      const { turnId } = await api.call('turn.start', { threadId, input: { text: 'talk' } });
      await expect.poll(() => watch.context.view?.turns[turnId]?.messages[1].parts[0]?.text.length ?? 0, { timeout: 20_000 }).toBeGreaterThan(10);
      await own.restart();
      await expect.poll(async () => (await turnOf(api, threadId, turnId).catch(() => null))?.state, { timeout: 40_000 }).toBe('completed');
      await expect.poll(() => watch.context.view?.turns[turnId]?.state, { timeout: 20_000 }).toBe('completed');
      await watch.settled();
      expect(watch.context.view).toEqual((await api.call('thread.get', { threadId })).thread);
      expect((await turnOf(api, threadId, turnId)).messages[1].parts.map((part) => part.text).join('')).toBe(slowText);
      watch.close();
    } finally {
      await Promise.all(processes.splice(0).map((process) => process.kill('SIGKILL')));
      await own.dispose();
    }
  }, 120_000);
});
