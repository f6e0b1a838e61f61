import { describe, expect, inject, it, onTestFinished } from 'vitest';
import type { Bus } from '../../domain/index.ts';
import { NatsBus } from '../../bus/index.ts';
import { busContract } from './busContract.ts';

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
