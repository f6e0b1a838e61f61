import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Bus, BusMessage } from '../../domain/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';

/** A connection that loses event messages while `dropping` is on, as a flaky network would. */
function lossy(bus: Bus) {
  const state = { dropping: false, dropped: 0 };
  const wrapped: Bus = {
    ...bus,
    publish: bus.publish.bind(bus),
    inbox: bus.inbox.bind(bus),
    request: bus.request.bind(bus),
    flush: bus.flush.bind(bus),
    drain: bus.drain.bind(bus),
    close: bus.close.bind(bus),
    status: bus.status.bind(bus),
    onStatus: bus.onStatus.bind(bus),
    onError: bus.onError.bind(bus),
    subscribe: (subject, handler, options) =>
      bus.subscribe(
        subject,
        (message: BusMessage) => {
          if (state.dropping) state.dropped += 1;
          else handler(message);
        },
        options,
      ),
  };
  return { bus: wrapped, state };
}

describe('client catch-up by sequence', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await openApiFixture();
  });
  afterAll(async () => {
    await fx.dispose();
  });

  async function renames(threadId: string, from: number, count: number) {
    for (let i = from; i < from + count; i++) await fx.server.engine.submit({ type: 'thread.rename', commandId: `${threadId}-r${i}`, threadId, title: `title ${i}` });
  }

  it('fills a gap of up to 1,000 missed events from thread.events, without a new snapshot', async () => {
    const { bus, state } = lossy(await fx.connect());
    const client = new TurnloomClient(bus, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', { title: 'gap' });
    const watch = await client.watchThread(threadId);
    await renames(threadId, 0, 10);
    state.dropping = true;
    await renames(threadId, 10, 900);
    state.dropping = false;
    await renames(threadId, 910, 1); // the next live event reveals the gap
    await expect.poll(() => watch.context.seq, { timeout: 20_000 }).toBe(912);
    await watch.settled();
    expect(state.dropped).toBe(900);
    expect(watch.context.snapshots).toBe(1);
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    watch.close();
  });

  it('takes a fresh snapshot when more than 1,000 events were missed', async () => {
    const { bus, state } = lossy(await fx.connect());
    const client = new TurnloomClient(bus, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', { title: 'big gap' });
    const watch = await client.watchThread(threadId);
    state.dropping = true;
    await renames(threadId, 0, 1_200);
    state.dropping = false;
    await renames(threadId, 1_200, 1);
    await expect.poll(() => watch.context.seq, { timeout: 20_000 }).toBe(1_202);
    await watch.settled();
    expect(watch.context.snapshots).toBe(2);
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    watch.close();
  });

  it('keeps the older turns it loaded when a fresh window replaces its view', async () => {
    const { bus, state } = lossy(await fx.connect());
    const client = new TurnloomClient(bus, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', { title: 'many turns' });
    for (let i = 0; i < 25; i++) {
      const { turnId } = await client.call('turn.start', { threadId, input: { text: `turn ${i}` } });
      await fx.server.engine.submit({ type: 'turn.settle', commandId: `${threadId}-settle-${i}`, threadId, turnId, outcome: { kind: 'failed', error: 'no worker here' } });
    }
    const watch = await client.watchThread(threadId);
    expect(watch.context.view!.turnIds).toHaveLength(20);
    while ((await watch.loadOlderTurns()) > 0);
    expect(watch.context.view!.turnIds).toHaveLength(25);
    state.dropping = true;
    await renames(threadId, 0, 1_100);
    state.dropping = false;
    await renames(threadId, 1_100, 1);
    await expect.poll(() => watch.context.snapshots, { timeout: 20_000 }).toBe(2);
    await watch.settled();
    expect(watch.context.olderCursor).toBeNull();
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    watch.close();
  });

  it('drops an event it already has', async () => {
    const hub = await fx.connect();
    const client = new TurnloomClient(hub, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', { title: 'dupes' });
    const watch = await client.watchThread(threadId, { via: 'subjects' });
    await renames(threadId, 0, 3);
    await expect.poll(() => watch.context.seq).toBe(4);
    const { events } = await client.call('thread.events', { threadId, after: 0 });
    // Replay the whole log on the live subject, as a broker redelivery would.
    const { MSGPACK, encode } = await import('../../bus/index.ts');
    for (const event of events) hub.publish(fx.server.subjects.events(threadId), encode(event, MSGPACK));
    await hub.flush();
    await watch.settled();
    expect(watch.context.duplicates).toBe(4);
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    watch.close();
  });
});

describe('client catch-up when things go wrong', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await openApiFixture({ maxPayloadBytes: 64 * 1024 });
  });
  afterAll(async () => {
    await fx.dispose();
  });

  it('serves a long thread as a window of its newest turns, and pages the older ones', async () => {
    const client = new TurnloomClient(await fx.connect(), { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', {});
    // Three turns with long messages: a view far larger than one 64 KiB answer.
    for (let i = 0; i < 3; i++) {
      const { turnId } = await client.call('turn.start', { threadId, input: { text: `${i}`.repeat(30_000) } });
      await fx.server.engine.submit({ type: 'turn.settle', commandId: `done-${i}`, threadId, turnId, outcome: { kind: 'failed', error: 'no worker here' } });
    }
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'one more' } });
    const window = await client.call('thread.get', { threadId });
    expect(window.thread.turnIds.at(-1)).toBe(turnId);
    expect(window.olderTurns).toBeGreaterThan(0);
    expect(window.olderTurns + window.thread.turnIds.length).toBe(4);
    const page = await client.call('thread.events', { threadId, after: 0 });
    expect(page.events.length).toBeLessThan((await fx.server.engine.getThread(threadId)).seq);

    const watch = await client.watchThread(threadId);
    expect(watch.context.view).toEqual(window.thread);
    while ((await watch.loadOlderTurns()) > 0);
    expect(watch.context.olderCursor).toBeNull();
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    await client.call('turn.interrupt', { threadId, turnId });
    await expect.poll(() => watch.context.view?.turns[turnId]?.state).toMatch(/^interrupting/);
    watch.close();
  });

  it('folds the whole log when even the open turn is too large to send', async () => {
    const client = new TurnloomClient(await fx.connect(), { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'x'.repeat(30_000) } });
    const t = turnEvents(turnId);
    // A step still streaming a long answer: its text part is open, so the open turn is over one 64 KiB answer.
    const [opened, delta] = t.text('p1', 1, 'y'.repeat(30_000));
    await fx.server.engine.submit({ type: 'turn.record', commandId: `${threadId}-long`, threadId, turnId, events: [t.sessionStarted(), t.started(), t.step(1), opened!, delta!] });
    await expect(client.call('thread.get', { threadId })).rejects.toMatchObject({ code: 'unavailable', details: { size: expect.any(Number), turnId } });
    const watch = await client.watchThread(threadId);
    expect(watch.context.view).toEqual(await fx.server.engine.getThread(threadId));
    await client.call('turn.interrupt', { threadId, turnId });
    await expect.poll(() => watch.context.view?.turns[turnId]?.state).toMatch(/^interrupting/);
    watch.close();
  });

  it('stops with status failed, not a crash, on an event that will not fold', async () => {
    const bus = await fx.connect();
    const client = new TurnloomClient(bus, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', {});
    const watch = await client.watchThread(threadId, { via: 'subjects' });
    const { MSGPACK, encode } = await import('../../bus/index.ts');
    const forged = { seq: 1, threadId, threadSeq: 2, commandId: 'x', at: 0, event: { type: 'turn.started', turnId: 'ghost' } };
    bus.publish(fx.server.subjects.events(threadId), encode(forged, MSGPACK));
    await expect.poll(() => watch.context.status).toBe('failed');
    expect(watch.context.error).toMatch(/turn-scope/);
    watch.close();
  });

  it('notices a lost last event by asking the log now and then', async () => {
    const { bus, state } = lossy(await fx.connect());
    const client = new TurnloomClient(bus, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', {});
    const watch = await client.watchThread(threadId, { pollMs: 100 });
    state.dropping = true;
    await fx.server.engine.submit({ type: 'thread.rename', commandId: `${threadId}-lost`, threadId, title: 'the last word' });
    await expect.poll(() => watch.context.view?.title, { timeout: 5_000 }).toBe('the last word');
    expect(state.dropped).toBe(1);
    watch.close();
  });
});
