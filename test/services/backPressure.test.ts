import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { Worker } from '../../services/worker/worker.ts';
import { tempDir } from '../support/tempDir.ts';

/** A turn that holds its slot a while: some text, a pause, the rest. */
const script = { steps: [[{ text: 'Working on it.' }, { wait: 400 }, { text: ' Done.' }]] };

describe('back-pressure: one engine runs at most maxRunningTurns turns', () => {
  const dir = tempDir('turnloom-back-pressure-');
  let server: TurnloomServer | undefined;
  let worker: Worker | undefined;
  afterEach(async () => {
    await worker?.stop();
    await server?.stop();
    dir.remove();
  });

  it('keeps turns past the limit requested until a slot frees, refuses turn.start with overloaded past the waiting bound, and loses nothing', async () => {
    const hub = new InProcessHub();
    server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), workers: { maxRunningTurns: 2, maxWaitingTurns: 3 } });
    // The worker would take ten at once: only the engine holds it back.
    worker = await new Worker({ bus: hub.connect(), workerId: 'w1', adapterFor: () => new ScriptedProvider(script), concurrency: 10, stopGraceMs: 300 }).start();
    const api = new TurnloomClient(hub.connect());
    const gateway = server.gateway;
    const seen = { running: 0, waiting: 0 };
    const sampler = setInterval(() => {
      const { running, waiting } = gateway.load();
      seen.running = Math.max(seen.running, running);
      seen.waiting = Math.max(seen.waiting, waiting);
    }, 5);

    const threads = await Promise.all(Array.from({ length: 5 }, async () => (await api.call('thread.create', {})).threadId));
    const started: Array<{ threadId: string; turnId: string }> = [];
    for (const threadId of threads) {
      const { turnId } = await api.call('turn.start', { threadId, input: { text: 'go' } });
      started.push({ threadId, turnId });
    }
    // Two run, three wait: the bound of waiting turns is reached, and one more turn is refused, writing nothing.
    const late = (await api.call('thread.create', {})).threadId;
    const refused = await api.call('turn.start', { threadId: late, input: { text: 'one too many' } }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'overloaded', details: { running: expect.any(Number), waiting: expect.any(Number), retryAfterMs: expect.any(Number) } });
    expect((await api.call('thread.get', { threadId: late })).thread.openTurnId).toBeNull();
    const waitingNow = await Promise.all(started.map(async ({ threadId, turnId }) => (await api.call('thread.get', { threadId })).thread.turns[turnId]!));
    expect(waitingNow.filter((turn) => turn.lease === null && turn.state === 'requested').length).toBeGreaterThanOrEqual(3);

    // Each waiting turn goes on once a slot frees.
    for (const { threadId, turnId } of started) {
      await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 20_000, interval: 50 }).toBe('completed');
    }
    clearInterval(sampler);
    expect(seen.running).toBe(2);
    expect(gateway.load()).toMatchObject({ running: 0, waiting: 0 });
    // With room again, the refused start goes through.
    const { turnId } = await api.call('turn.start', { threadId: late, input: { text: 'again' } });
    await expect.poll(async () => (await api.call('thread.get', { threadId: late })).thread.turns[turnId]!.state, { timeout: 20_000, interval: 50 }).toBe('completed');
    for (const { threadId } of [...started, { threadId: late }]) {
      const { turns } = (await api.call('thread.get', { threadId })).thread;
      for (const turn of Object.values(turns)) expect(turn.messages[1].parts.map((part) => part.text).join('')).toBe('Working on it. Done.');
    }
  });
});
