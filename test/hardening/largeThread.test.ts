import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { JSON_TYPE } from '../../bus/index.ts';
import type { StoredEvent } from '../../domain/index.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';

const TURNS = 400;

/** 400 turns with 2,000-character inputs: about 4,000 events and 1.6 MB, far more than one answer. */
describe('a large thread over NATS, with a JSON client', () => {
  let fx: ApiFixture;
  const threadId = 'big';
  beforeAll(async () => {
    fx = await openApiFixture({ natsUrl: inject('natsUrl') });
    const { engine } = fx.server;
    await engine.submit({ type: 'thread.create', commandId: 'big-create', threadId, title: 'big', workspace: null, owner: null });
    for (let index = 0; index < TURNS; index++) {
      const turnId = `t${index}`;
      const t = turnEvents(turnId);
      await engine.submit({ type: 'turn.start', commandId: `big-start-${index}`, threadId, turnId, input: { text: `${index % 10}`.repeat(2_000) }, provider: { name: 'scripted', model: null } });
      await engine.submit({
        type: 'turn.record',
        commandId: `big-record-${index}`,
        threadId,
        turnId,
        events: [...(index === 0 ? [t.sessionStarted()] : []), t.started(), t.step(1), ...t.text(`${turnId}-p1`, 1, 'an answer'), t.responded(1, 'stop'), t.stepFinished(1), t.completed()],
      });
    }
  }, 120_000);
  afterAll(async () => {
    await fx.dispose();
  });

  it('answers thread.get with a window of the newest turns, and pages the older ones', async () => {
    const client = await fx.client({ contentType: JSON_TYPE });
    const window = await client.call('thread.get', { threadId });
    expect(window.thread.turnIds).toHaveLength(20);
    expect(window.olderTurns).toBe(TURNS - 20);
    expect(window.thread.turnIds.at(-1)).toBe(`t${TURNS - 1}`);
    const seen = [...window.thread.turnIds];
    for (let before = window.olderCursor; before !== null; ) {
      const page = await client.call('thread.turns', { threadId, before, limit: 100 });
      seen.unshift(...page.turns.map((turn) => turn.id).reverse());
      before = page.olderCursor;
    }
    expect(seen).toEqual(Array.from({ length: TURNS }, (_, index) => `t${index}`));
  });

  it('pages thread.events from 0 to the head with no dead end, and the fold is the engine’s view', async () => {
    const client = await fx.client({ contentType: JSON_TYPE });
    const events: StoredEvent[] = [];
    let pages = 0;
    for (let after = 0; ; pages++) {
      const page = await client.call('thread.events', { threadId, after });
      if (page.events.length === 0) break;
      events.push(...page.events);
      after = page.events.at(-1)!.threadSeq;
      if (after === page.lastSeq) break;
    }
    const engineView = await fx.server.engine.getThread(threadId);
    expect(events.map((event) => event.threadSeq)).toEqual(Array.from({ length: engineView.seq }, (_, index) => index + 1));
    expect(pages).toBeGreaterThan(1);
    expect(rebuildView(threadId, events)).toEqual(engineView);
  });

  it('lets the bundled ThreadWatch reach the head, then the first turn', async () => {
    const client = await fx.client({ contentType: JSON_TYPE });
    const watch = await client.watchThread(threadId);
    const engineView = await fx.server.engine.getThread(threadId);
    expect(watch.context).toMatchObject({ status: 'live', seq: engineView.seq });
    while ((await watch.loadOlderTurns()) > 0);
    expect(watch.context.view).toEqual(engineView);
    await client.call('thread.rename', { threadId, title: 'still live' });
    await expect.poll(() => watch.context.view?.title).toBe('still live');
    watch.close();
  });
});
