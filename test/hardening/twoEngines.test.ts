import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Bus } from '../../domain/index.ts';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { PrefixTaken } from '../../services/api/engineClaim.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { tempDir } from '../support/tempDir.ts';

describe('one engine per subject prefix', () => {
  const folders = [tempDir('turnloom-two-'), tempDir('turnloom-two-'), tempDir('turnloom-two-'), tempDir('turnloom-two-')];
  const buses: Bus[] = [];
  const servers: TurnloomServer[] = [];
  const connect = async () => {
    const bus = await NatsBus.connect({ servers: inject('natsUrl') });
    buses.push(bus);
    return bus;
  };
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await Promise.all(buses.map((bus) => bus.close()));
    for (const folder of folders) folder.remove();
  });

  it('refuses a second engine with another data folder on the same NATS prefix; the first keeps every request', async () => {
    const prefix = `two${randomUUID().slice(0, 8)}`;
    servers.push(await startTurnloomServer({ bus: await connect(), store: LmdbStore.open(folders[0]!.path), prefix }));
    const second = startTurnloomServer({ bus: await connect(), store: LmdbStore.open(folders[1]!.path), prefix });
    await expect(second).rejects.toBeInstanceOf(PrefixTaken);
    await expect(second).rejects.toThrow(new RegExp(`pid ${process.pid} .*already serves the subject prefix "${prefix}"`));
    // The refused engine let go of its folder, and never answered anything.
    const reopened = LmdbStore.open(folders[1]!.path);
    expect([...reopened.threadsNewestFirst(null)]).toEqual([]);
    await reopened.close();
    const client = new TurnloomClient(await connect(), { prefix });
    for (let index = 0; index < 20; index++) {
      const { threadId } = await client.call('thread.create', {});
      expect((await client.call('thread.get', { threadId })).thread.id).toBe(threadId);
    }
  });

  it('lets exactly one of two engines started at the same moment serve', async () => {
    const prefix = `race${randomUUID().slice(0, 8)}`;
    const results = await Promise.allSettled([
      startTurnloomServer({ bus: await connect(), store: LmdbStore.open(folders[2]!.path), prefix }),
      startTurnloomServer({ bus: await connect(), store: LmdbStore.open(folders[3]!.path), prefix }),
    ]);
    const started = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    servers.push(...started);
    expect(started).toHaveLength(1);
    expect(results.find((result) => result.status === 'rejected')).toMatchObject({ reason: expect.any(PrefixTaken) });
  });
});
