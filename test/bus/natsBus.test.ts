import { inject } from 'vitest';
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
