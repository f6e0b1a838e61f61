import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, MSGPACK, decode } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { StoredEvent } from '../../domain/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { subjects } from '../../bus/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { createThread, record, startTurn, turnEvents } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

const OPEN_TURNS = 200;

describe('crash repair as a reactor', () => {
  const dir = tempDir('turnloom-repair-reactor-');
  afterAll(() => dir.remove());

  it('runs after the API is up, beside it, and publishes what it writes', async () => {
    // A process that died with 200 turns mid-step.
    const before = await Engine.open({ store: LmdbStore.open(dir.path) });
    for (let index = 0; index < OPEN_TURNS; index++) {
      const threadId = `th${index}`;
      const t = turnEvents(`t${index}`);
      await before.submit(createThread(threadId));
      await before.submit(startTurn(threadId, `t${index}`));
      await before.submit(record(threadId, `t${index}`, [t.sessionStarted(), t.started(), t.step(1), ...t.text(`p${index}`, 1, 'half an answer')]));
    }
    await before.close();

    const hub = new InProcessHub();
    const watcher = hub.connect();
    const heard: StoredEvent[] = [];
    watcher.subscribe(subjects().eventsAll, (message) => heard.push(decode(message.data, MSGPACK) as StoredEvent));
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    const client = new TurnloomClient(hub.connect());
    // The API answers at once, while repairs are still on their way.
    expect((await client.call('health', {})).status).toBe('ok');
    const stillOpen = (await client.call('thread.list', { limit: 1_000 })).threads.filter((thread) => thread.openTurnId !== null).length;
    expect(stillOpen).toBeGreaterThan(0);

    expect(await server.repaired).toBe(OPEN_TURNS);
    await watcher.flush();
    const interrupted = heard.filter(({ event }) => event.type === 'turn.interrupted');
    expect(interrupted).toHaveLength(OPEN_TURNS);
    expect(interrupted.every(({ event }) => event.type === 'turn.interrupted' && event.cause === 'repair')).toBe(true);
    expect((await client.call('thread.list', { limit: 1_000 })).threads.filter((thread) => thread.openTurnId !== null)).toEqual([]);
    console.log(`repair reactor: ${OPEN_TURNS} turns repaired; ${stillOpen} still open when the API first answered`);
    await server.stop();
  });
});
