import { connect } from '@nats-io/transport-node';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { NatsBus } from '../bus/index.ts';
import { TurnloomClient } from '../client/index.ts';
import type { DomainEvent } from '../domain/index.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { startNatsServer } from '../test/support/natsServer.ts';
import { tempDir } from '../test/support/tempDir.ts';

const SECONDS = 2;

/** Runs `work` from `concurrency` loops for a fixed time; returns completed operations per second. */
async function rate(concurrency: number, work: () => Promise<void>): Promise<number> {
  let done = 0;
  const until = performance.now() + SECONDS * 1_000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await work();
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - started) / 1_000);
}

export async function busBench(): Promise<void> {
  const nats = await startNatsServer({ jetstream: false });
  const dir = tempDir('turnloom-busbench-');
  const raw = await connect({ servers: nats.url });
  const rawResponder = await connect({ servers: nats.url });
  rawResponder.subscribe('bench.echo', { callback: (_error, msg) => void msg.respond(msg.data) });
  const payload = new TextEncoder().encode('{}');

  const engineBus = await NatsBus.connect({ servers: nats.url });
  const server = await startTurnloomServer({ bus: engineBus, store: LmdbStore.open(dir.path), prefix: 'bench' });
  const client = new TurnloomClient(await NatsBus.connect({ servers: nats.url }), { prefix: 'bench' });
  const { threadId } = await client.call('thread.create', { title: 'bench' });

  console.log(`bus: measured side by side on one private nats-server, ${SECONDS} s per cell`);
  console.log('request/reply round trips per second');
  console.log('concurrency | raw NATS req/s | turnloom API (health) req/s | turnloom API (thread.get) req/s | health / raw | thread.get / raw');
  for (const concurrency of [1, 16]) {
    const rawRate = await rate(concurrency, async () => void (await raw.request('bench.echo', payload, { timeout: 5_000 })));
    const health = await rate(concurrency, async () => void (await client.call('health', {})));
    const get = await rate(concurrency, async () => void (await client.call('thread.get', { threadId })));
    console.log(`${concurrency} | ${rawRate.toFixed(0)} | ${health.toFixed(0)} | ${get.toFixed(0)} | ${(health / rawRate).toFixed(2)} | ${(get / rawRate).toFixed(2)}`);
  }

  // Fan-out: four subscribers; raw publishes versus committed events (100 per command) published by the engine.
  const subscribers = await Promise.all(Array.from({ length: 4 }, () => connect({ servers: nats.url })));
  let rawReceived = 0;
  for (const subscriber of subscribers) subscriber.subscribe('bench.fan', { callback: () => void (rawReceived += 1) });
  let eventsReceived = 0;
  for (const subscriber of subscribers) subscriber.subscribe(server.subjects.events(threadId), { callback: () => void (eventsReceived += 1) });
  await Promise.all(subscribers.map((subscriber) => subscriber.flush()));

  const total = 20_000;
  let started = performance.now();
  for (let i = 0; i < total; i++) raw.publish('bench.fan', payload);
  await raw.flush();
  while (rawReceived < total * 4) await new Promise((resolve) => setTimeout(resolve, 5));
  const rawFan = rawReceived / ((performance.now() - started) / 1_000);

  const { turnId } = await client.call('turn.start', { threadId, input: { text: 'fan out' } });
  const record = (events: DomainEvent[], n: number) => server.engine.submit({ type: 'turn.record', commandId: `fan-${n}`, threadId, turnId, events });
  await record(
    [
      { type: 'session.started', providerSessionId: null },
      { type: 'turn.started', turnId },
      { type: 'step.started', turnId, step: 1, digest: null },
      { type: 'part.started', turnId, partId: 'p', step: 1, kind: 'text' },
    ],
    0,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  eventsReceived = 0;
  started = performance.now();
  for (let n = 1; n <= total / 100; n++) {
    await record(Array.from({ length: 100 }, (): DomainEvent => ({ type: 'part.delta', turnId, partId: 'p', text: 'x' })), n);
  }
  while (eventsReceived < total * 4) await new Promise((resolve) => setTimeout(resolve, 5));
  const eventFan = eventsReceived / ((performance.now() - started) / 1_000);

  console.log('\nfan-out to 4 subscribers, messages delivered per second');
  console.log('raw NATS publish msg/s | turnloom committed events msg/s (durable, 100 events per command) | events / raw');
  console.log(`${rawFan.toFixed(0)} | ${eventFan.toFixed(0)} | ${(eventFan / rawFan).toFixed(2)}`);

  await Promise.all(subscribers.map((subscriber) => subscriber.close()));
  await client.bus.close();
  await server.stop();
  await engineBus.close();
  await raw.close();
  await rawResponder.close();
  await nats.dispose();
  dir.remove();
}
