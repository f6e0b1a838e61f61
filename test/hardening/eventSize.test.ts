import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, JSON_TYPE, MSGPACK } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { jsonBytes } from '../../domain/index.ts';
import { type WireEvent, eventLimitFor } from '../../services/api/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { turnEvents } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

/** Every event of the thread, page by page, as a client holding only the API reads them. */
async function allEvents(client: TurnloomClient, threadId: string): Promise<WireEvent[]> {
  const events: WireEvent[] = [];
  for (;;) {
    const page = await client.call('thread.events', { threadId, after: events.at(-1)?.threadSeq ?? 0 });
    events.push(...page.events);
    if (page.events.length === 0 || events.at(-1)!.threadSeq === page.lastSeq) return events;
  }
}

/** U+0001 is one byte of UTF-8 and msgpack, six of JSON: the case where one encoding's limit is not the other's. */
const control = (length: number) => '\u0001'.repeat(length);

describe('size limits hold for every encoding', () => {
  const dir = tempDir('turnloom-size-');
  afterAll(() => dir.remove());

  async function serve(maxPayloadBytes?: number) {
    const hub = new InProcessHub();
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path), ...(maxPayloadBytes ? { maxPayloadBytes } : {}) });
    return {
      server,
      json: new TurnloomClient(hub.connect(), { contentType: JSON_TYPE }),
      msgpack: new TurnloomClient(hub.connect(), { contentType: MSGPACK }),
    };
  }

  it('refuses a client event too large for JSON, cuts worker output with a note, and no reader is locked out', async () => {
    const { server, json, msgpack } = await serve();
    onTestFinished(() => server.stop());
    const { threadId } = await msgpack.call('thread.create', { threadId: 'sizes' });
    const before = (await json.call('thread.get', { threadId })).seq;
    // 200 KB as msgpack, 1.2 MB as JSON.
    await expect(msgpack.call('turn.start', { threadId, input: { text: control(200_000) } })).rejects.toMatchObject({
      code: 'invalid_payload',
      details: { event: 'turn.requested', limit: eventLimitFor(1024 * 1024) },
    });
    expect((await json.call('thread.get', { threadId })).seq).toBe(before);

    // A tool's output as large: the worker's event is cut to fit, keeping its start and saying so.
    const { turnId } = await msgpack.call('turn.start', { threadId, turnId: 'big-output', input: { text: 'run it' } });
    const t = turnEvents(turnId);
    await server.engine.submit({
      type: 'turn.record',
      commandId: 'big-output-record',
      threadId,
      turnId,
      events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.executing('p1', 'c1'), t.result('p1', 'c1', `begin${control(300_000)}`)],
    });
    const stored = server.engine.readEvents(threadId, 0, 100).find(({ event }) => event.type === 'tool.result')!;
    expect(jsonBytes(stored.event)).toBeLessThanOrEqual(eventLimitFor(1024 * 1024));
    const output = (stored.event as { output: string }).output;
    expect(output.startsWith('begin\u0001')).toBe(true);
    expect(output).toMatch(/characters cut here: the event was over the \d+-byte limit\]$/);

    for (const client of [json, msgpack]) {
      // The open turn is now larger than one answer: thread.get says so, and the log pages to its end.
      await expect(client.call('thread.get', { threadId })).rejects.toMatchObject({ code: 'unavailable', details: { turnId } });
      const events = await allEvents(client, threadId);
      expect(events.map((event) => event.threadSeq)).toEqual(Array.from({ length: events.length }, (_, index) => index + 1));
      const watch = await client.watchThread(threadId);
      expect(watch.context.view!.turns[turnId]!.messages[1].parts[0]!.tool!.output).toBe(output);
      watch.close();
    }
    // Once it is closed and a newer turn follows, the window leaves it out, and it comes alone as an older page.
    await server.engine.submit({ type: 'turn.settle', commandId: 'big-output-done', threadId, turnId, outcome: { kind: 'failed', error: 'enough' } });
    await json.call('turn.start', { threadId, input: { text: 'next' } });
    const window = await json.call('thread.get', { threadId });
    expect(window.thread.turnIds).toEqual([window.thread.openTurnId]);
    const older = await json.call('thread.turns', { threadId, before: window.olderCursor! });
    expect(older.turns.map((turn) => turn.id)).toEqual([turnId]);
    expect(older.turns[0]!.messages[1].parts[0]!.tool!.output).toBe(output);
  });

  it('cuts an event stored under a larger limit when a server with a smaller one sends it', async () => {
    const { server, json } = await serve(64 * 1024);
    onTestFinished(() => server.stop());
    const events = await allEvents(json, 'sizes');
    const big = events.find(({ event }) => event.type === 'tool.result')!;
    expect(big.cut).toBe(true);
    expect(jsonBytes(big)).toBeLessThan(32 * 1024);
    // The bundled client still reaches the head (the open turn is too large for one answer, so it folds the log).
    const watch = await json.watchThread('sizes');
    expect(watch.context.status).toBe('live');
    expect(watch.context.seq).toBe((await server.engine.getThread('sizes')).seq);
    watch.close();
  });
});
