import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';

describe('client catch-up across a NATS restart', () => {
  let server: NatsServerHandle;
  let fx: ApiFixture;
  beforeAll(async () => {
    server = await startNatsServer();
    fx = await openApiFixture({ natsUrl: server.url });
  });
  afterAll(async () => {
    await fx.dispose();
    await server.dispose();
  });

  it('ends with the engine’s exact view after 10,000 events and two server outages: no gap, no duplicate', async () => {
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', { title: 'firehose' });
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'stream a lot' } });
    const t = turnEvents(turnId);
    const { engine } = fx.server;
    await engine.submit({
      type: 'turn.record',
      commandId: 'open',
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId, partId: 'p', step: 1, kind: 'text' }],
    });

    const watch = await client.watchThread(threadId);
    // Every change of sequence, and whether a fresh snapshot caused it.
    const moves: Array<{ seq: number; snapshots: number }> = [];
    watch.store.subscribe(({ context }) => {
      if (moves.at(-1)?.seq !== context.seq) moves.push({ seq: context.seq, snapshots: context.snapshots });
    });
    const startSeq = watch.context.seq;

    const batches = 100;
    for (let batch = 0; batch < batches; batch++) {
      const deltas: DomainEvent[] = Array.from({ length: 100 }, (_, i) => ({ type: 'part.delta', turnId, partId: 'p', text: `${batch * 100 + i},` }));
      await engine.submit({ type: 'turn.record', commandId: `deltas-${batch}`, threadId, turnId, events: deltas });
      // Events keep being committed while the server is down, and the client must recover them
      // (through thread.events, or a fresh snapshot when it fell more than 1,000 behind).
      if (batch === 30 || batch === 60) await server.stop();
      if (batch === 37 || batch === 73) await server.start();
      await sleep(15); // a steady stream the client can keep up with between outages
    }
    const engineView = await engine.getThread(threadId);
    expect(engineView.seq).toBe(startSeq + 10_000);

    await expect.poll(() => watch.context.seq, { timeout: 30_000, interval: 100 }).toBe(engineView.seq);
    await watch.settled();
    expect(watch.context.view).toEqual(engineView);
    // The view advanced one event at a time, never skipping and never going back,
    // except where a gap past 1,000 events made it load a fresh snapshot.
    for (const [i, move] of moves.entries()) {
      const previous = moves[i - 1];
      if (!previous) continue;
      if (move.snapshots === previous.snapshots) expect(move.seq - previous.seq, `step after ${previous.seq}`).toBe(1);
      else expect(move.seq).toBeGreaterThan(previous.seq);
    }
    // How it recovered depends on how far behind the outage left it; either way is exact.
    expect(watch.context.snapshots).toBeGreaterThanOrEqual(1);
    expect(moves.length).toBeGreaterThan(1_000);
    console.log(`reconnect: ${moves.length} moves, ${watch.context.snapshots} snapshots, ${watch.context.duplicates} duplicates dropped`);
    watch.close();
  }, 120_000);
});
