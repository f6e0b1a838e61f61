import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { WATCH_KIND_HEADER } from '../../protocol/apiResults.ts';
import { ThreadWatches } from '../../services/api/threadWatches.ts';
import type { ApiCaller } from '../../protocol/apiCaller.ts';
import { ThreadWatch } from '../../protocol/threadWatch.ts';
import { subjects } from '../../bus/index.ts';
import { leaseByHand, startTurn } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

describe('thread.watch', () => {
  const dir = tempDir('turnloom-watch-');
  afterAll(() => dir.remove());
  const hub = new InProcessHub();
  const serve = (): Promise<TurnloomServer> =>
    startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), watches: { ttlMs: 400 }, providers: { scripted: new ScriptedProvider({ chunkSize: 4, steps: [[{ text: 'typed live, kept in the log' }]] }) } });

  it('delivers events and live deltas to the caller’s inbox, lapses unrenewed, and survives a server restart', async () => {
    let server = await serve();
    const client = new TurnloomClient(hub.connect());
    const { threadId } = await client.call('thread.create', { title: 'watched' });

    // A bare watch nobody renews stops costing anything after its time.
    const inbox = client.bus.inbox();
    const bare: number[] = [];
    client.bus.subscribe(inbox, (message) => bare.push(Number(message.headers['turnloom-seq'])));
    await client.call('thread.watch', { threadId, deliverTo: inbox });
    await client.call('thread.rename', { threadId, title: 'one' });
    await expect.poll(() => bare).toEqual([2]);
    await sleep(1_500);
    await client.call('thread.rename', { threadId, title: 'two' });
    await sleep(100);
    expect(bare).toEqual([2]);

    // The bundled watch renews by itself, and hears the live channel through the same inbox.
    const watch = await client.watchThread(threadId);
    const live: LiveDelta[] = [];
    watch.onLive((delta) => live.push(delta));
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' } });
    await expect.poll(() => watch.context.view?.turns[turnId]?.state, { timeout: 10_000 }).toBe('completed');
    expect(live.map((delta) => delta.text).join('')).toBe('typed live, kept in the log');
    await sleep(1_000);
    await client.call('thread.rename', { threadId, title: 'still heard' });
    await expect.poll(() => watch.context.view?.title).toBe('still heard');

    // The server restarts: the renewal finds the watch gone, starts it again and catches up.
    await server.stop();
    server = await serve();
    await server.engine.submit({ type: 'thread.rename', commandId: 'while-away', threadId, title: 'while away' });
    await expect.poll(() => watch.context.view?.title, { timeout: 5_000 }).toBe('while away');
    await client.call('thread.rename', { threadId, title: 'after the restart' });
    await expect.poll(() => watch.context.view?.title).toBe('after the restart');
    expect(watch.context.view).toEqual((await client.call('thread.get', { threadId })).thread);
    watch.close();
    await server.stop();
  });

  it('starts from a view folded before and folds on from its sequence, or loads the thread when the log does not continue it', async () => {
    const server = await serve();
    const client = new TurnloomClient(hub.connect());
    const asked: string[] = [];
    const counting: ApiCaller = {
      bus: client.bus,
      subjects: client.subjects,
      call: (method, params) => {
        asked.push(method);
        return client.call(method, params);
      },
      notify: (method, params) => client.notify(method, params),
    };
    const { threadId } = await client.call('thread.create', { title: 'zero' });
    await client.call('thread.rename', { threadId, title: 'one' });
    const before = (await client.call('thread.get', { threadId })).thread;
    await client.call('thread.rename', { threadId, title: 'two' });
    await client.call('thread.rename', { threadId, title: 'three' });
    const now = (await client.call('thread.get', { threadId })).thread;

    const seeded = new ThreadWatch(counting, threadId, { from: before });
    await seeded.start();
    expect([seeded.context.view, seeded.context.seq, seeded.context.snapshots, seeded.context.olderCursor]).toEqual([now, now.seq, 0, null]);
    expect(asked.filter((method) => method.startsWith('thread.') && method !== 'thread.watch')).toEqual(['thread.events']);
    await client.call('thread.rename', { threadId, title: 'four' });
    await expect.poll(() => seeded.context.view?.title).toBe('four');
    seeded.close();

    // A view past what the log holds (a copy that lost its tail) is not taken: the thread is loaded as without one.
    asked.length = 0;
    const ahead = new ThreadWatch(counting, threadId, { from: { ...before, seq: now.seq + 10, title: 'from elsewhere' } });
    await ahead.start();
    expect([ahead.context.view?.title, ahead.context.snapshots]).toEqual(['four', 1]);
    expect(asked).toContain('thread.get');
    ahead.close();
    await server.stop();
  });

  it('gives a worker’s watch the log’s events but not the live deltas, which are its own typing', async () => {
    const folder = tempDir('turnloom-watch-live-');
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(folder.path) });
    const bus = hub.connect();
    const watches = new ThreadWatches(bus, subjects(), {}).start(server.engine);
    const heard = { worker: [] as string[], client: [] as string[] };
    for (const who of ['worker', 'client'] as const) bus.subscribe(`inbox.${who}`, (message) => heard[who].push(String(message.headers[WATCH_KIND_HEADER])));
    await server.engine.submit({ type: 'thread.create', commandId: 'create', threadId: 'th', title: 'typed', workspace: null, owner: null });
    await server.engine.submit(startTurn('th', 't1'));
    watches.watch('worker:w1', 'th', 'inbox.worker');
    watches.watch('alice', 'th', 'inbox.client');
    const liveSubject = await leaseByHand(server.engine, subjects(), 'th', 't1');
    await expect.poll(() => heard.worker).toEqual(['event']);
    bus.publish(liveSubject, new TextEncoder().encode('a batch of deltas'));
    await expect.poll(() => heard.client).toEqual(['event', 'live']);
    await sleep(100);
    expect(heard.worker).toEqual(['event']);
    watches.stop();
    await server.stop();
    folder.remove();
  });
});
