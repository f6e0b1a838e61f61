import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type NatsServerHandle, startNatsServer } from './natsServer.ts';

describe('test harness: private nats-server', () => {
  const extra: NatsServerHandle[] = [];
  afterAll(async () => {
    await Promise.all(extra.map((server) => server.dispose()));
  });

  it('serves the run on a private port, not 4222', async () => {
    const url = inject('natsUrl');
    expect(url).not.toMatch(/:4222$/);
    const nc = await connect({ servers: url });
    const info = nc.info;
    expect(info?.jetstream).toBe(true);
    await nc.close();
  });

  it('starts, kills and restarts an extra server on the same port', async () => {
    const server = await startNatsServer();
    extra.push(server);
    const nc = await connect({ servers: server.url, reconnectTimeWait: 50, maxReconnectAttempts: -1 });
    const sub = nc.subscribe('ping.>');
    const received: string[] = [];
    const done = (async () => {
      for await (const msg of sub) {
        received.push(msg.subject);
        if (received.length === 2) break;
      }
    })();
    nc.publish('ping.one');
    await nc.flush();

    await server.kill();
    await server.start();
    // The client reconnects by itself and resubscribes.
    await expect.poll(async () => {
      nc.publish('ping.two');
      await nc.flush();
      return received.length;
    }, { timeout: 20_000, interval: 100 }).toBe(2);
    await done;
    expect(received).toEqual(['ping.one', 'ping.two']);
    await nc.close();
  });
});
