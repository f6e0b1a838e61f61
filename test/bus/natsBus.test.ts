import { describe, expect, inject, it, onTestFinished } from 'vitest';
import type { Bus } from '../../domain/index.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { busContract } from './busContract.ts';
import { startNatsServer } from '../support/natsServer.ts';

busContract('NATS', async () => {
  const opened: Bus[] = [];
  return {
    connect: async () => {
      const bus = await NatsBus.connect({ servers: inject('natsUrl') });
      opened.push(bus);
      return bus;
    },
    dispose: async () => {
      await Promise.all(opened.map((bus) => bus.close()));
    },
  };
});

describe('NATS: a message over the server’s max_payload', () => {
  it('is refused as invalid_payload (no retry can shrink it), on request and on publish', async () => {
    const bus = await NatsBus.connect({ servers: inject('natsUrl') });
    onTestFinished(() => bus.close());
    const tooLarge = new Uint8Array(bus.maxPayload! + 1);
    await expect(bus.request('turnloom.test.big', tooLarge, { timeoutMs: 1_000 })).rejects.toMatchObject({ code: 'invalid_payload', kind: 'too_large' });
    expect(() => bus.publish('turnloom.test.big', tooLarge)).toThrow(expect.objectContaining({ code: 'invalid_payload', kind: 'too_large' }));
  });
});

describe('NATS: a flush while the server is away', () => {
  it('waits for the reconnect instead of failing, and is one typed error once the connection is closed', async () => {
    const server = await startNatsServer();
    const bus = await NatsBus.connect({ servers: server.url });
    try {
      await server.kill();
      const flushed = bus.flush();
      await server.restart();
      await expect(flushed).resolves.toBeUndefined();
      await bus.close();
      await expect(bus.flush()).rejects.toMatchObject({ code: 'unavailable', kind: 'closed' });
    } finally {
      await bus.close();
      await server.dispose();
    }
  }, 30_000);
});
