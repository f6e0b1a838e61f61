import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

/** A connection that loses event messages while `dropping` is on, as a flaky network would. */
function lossy(bus: Bus) {
  const state = { dropping: false, dropped: 0 };
  const wrapped: Bus = {
    ...bus,
    publish: bus.publish.bind(bus),
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

  it('drops an event it already has', async () => {
    const hub = await fx.connect();
    const client = new TurnloomClient(hub, { prefix: fx.prefix });
    const { threadId } = await client.call('thread.create', { title: 'dupes' });
    const watch = await client.watchThread(threadId);
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
