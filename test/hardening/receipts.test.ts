import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { createThread, readAllReceipts } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

describe('receipts', () => {
  let dir: ReturnType<typeof tempDir>;
  afterEach(() => dir.remove());

  it('are not written for a refused command whose id the server made up', async () => {
    dir = tempDir('turnloom-receipts-');
    const hub = new InProcessHub();
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    const client = new TurnloomClient(hub.connect());
    const { threadId } = await client.call('thread.create', { commandId: 'create-1' });
    let refused = 0;
    for (let batch = 0; batch < 200; batch++) {
      const answers = await Promise.allSettled(Array.from({ length: 100 }, () => client.call('turn.interrupt', { threadId })));
      refused += answers.filter((answer) => answer.status === 'rejected' && (answer.reason as { code: string }).code === 'illegal_transition').length;
    }
    expect(refused).toBe(20_000);
    // A client id keeps its answer, rejection included, so a retry hears the same.
    await expect(client.call('turn.interrupt', { threadId, commandId: 'mine' })).rejects.toMatchObject({ code: 'illegal_transition' });
    await server.stop();
    const receipts = await readAllReceipts(dir.path);
    expect(receipts.map(({ commandId, outcome }) => [commandId, outcome]).sort()).toEqual([
      ['create-1', 'accepted'],
      ['mine', 'rejected'],
    ]);
  });

  it('expire by age and by count; a retry after expiry is a new command', async () => {
    dir = tempDir('turnloom-receipts-');
    let now = 1_000_000;
    const engine = await Engine.open({ store: LmdbStore.open(dir.path), now: () => now, receipts: { ttlMs: 60_000, maxCount: 5 } });
    await engine.submit(createThread('th'));
    for (let index = 0; index < 8; index++) {
      now += 1_000;
      await engine.submit({ type: 'thread.rename', commandId: `rename-${index}`, threadId: 'th', title: `t${index}` }, { clientCommandId: true });
    }
    // Past the count, the oldest go first.
    expect(await engine.expireReceipts()).toBe(4);
    const retried = await engine.submit({ type: 'thread.rename', commandId: 'rename-7', threadId: 'th', title: 't7' });
    expect(retried.fromThreadSeq).toBe(9);
    expect(retried.toThreadSeq).toBe(9);
    // The first rename's receipt is gone: the same id now writes again.
    const again = await engine.submit({ type: 'thread.rename', commandId: 'rename-0', threadId: 'th', title: 't0' });
    expect(again.fromThreadSeq).toBe(10);
    // Past the age, all of them go.
    now += 61_000;
    expect(await engine.expireReceipts()).toBe(6);
    await engine.close();
    expect(await readAllReceipts(dir.path)).toEqual([]);
  });
});
