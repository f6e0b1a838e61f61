import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { QUEUE_PREVIEW_CHARS, type ThreadHead, TurnloomError, type TurnView } from '../../domain/index.ts';
import type { EngineOptions } from '../../services/engine/engine.ts';
import { type EngineFixture, createThread, openEngineFixture, rebuildFromLog, record, startTurn, turnEvents } from '../support/engineFixture.ts';

/** Bytes this process handed to write calls so far (Linux): LMDB writes its pages with them. */
const writtenBytes = (): number => Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);

/** An input of `size` characters that says which it is. */
const inputOf = (name: string, size: number) => `${name}: `.padEnd(size, 'x');

async function rejection(promise: Promise<unknown>): Promise<TurnloomError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TurnloomError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

let fx: EngineFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

/** A worker's run of a turn: one step, then done (the thread's first turn starts its session too). */
async function runTurn(fx: EngineFixture, turnId: string, { first = false, started = false } = {}): Promise<void> {
  const t = turnEvents(turnId);
  const events = [...(first ? [t.sessionStarted()] : []), ...(started ? [] : [t.started()]), t.step(1), t.stepFinished(1), t.completed()];
  expect((await fx.engine.submit(record('th', turnId, events))).refused).toEqual([]);
}

async function openThread(options: Partial<EngineOptions>): Promise<EngineFixture> {
  fx = await openEngineFixture(options);
  await fx.engine.submit(createThread('th'));
  // No worker: the open turn never settles on its own, so later input waits.
  await fx.engine.submit(startTurn('th', 'open'));
  return fx;
}

describe('queued input', () => {
  it('costs the disk about what it holds: 200 queued inputs of 100 KB grow the folder linearly, and each still runs whole, in order, after a restart', async () => {
    const fx = await openThread({ queue: { maxTurns: 1_000, maxBytes: 64 * 1024 * 1024 } });
    const count = 200;
    const size = 100_000;
    const before = writtenBytes();
    for (let i = 0; i < count; i++) await fx.engine.submit(startTurn('th', `q${i}`, inputOf(`q${i}`, size)));
    const written = writtenBytes() - before;
    const file = statSync(join(fx.dir, 'data.mdb')).size;
    const raw = count * size;
    // Before the thread row held only small entries: 2.0 GB written and a 296 MB data.mdb for these 20 MB.
    expect(file).toBeLessThan(3 * raw);
    expect(written).toBeLessThan(3 * raw);

    await fx.restart();
    const queue = fx.store.readView('th')!.queue;
    expect(queue.map(({ turnId }) => turnId)).toEqual(Array.from({ length: count }, (_, i) => `q${i}`));
    expect(queue[7]).toMatchObject({ bytes: size, preview: inputOf('q7', QUEUE_PREVIEW_CHARS) });
    await runTurn(fx, 'open', { first: true });
    await runTurn(fx, 'q0');
    const view = await fx.engine.getThread('th');
    expect(view.turnIds).toEqual(['open', 'q0', 'q1']);
    expect([view.turns.q0!.messages[0].parts[0]!.text, view.turns.q1!.messages[0].parts[0]!.text]).toEqual([inputOf('q0', size), inputOf('q1', size)]);
    expect(view.queue).toHaveLength(count - 2);
    expect(fx.store.readView('th')).toEqual(rebuildFromLog(fx.store, 'th'));
  });

  it('refuses a turn past the queue limit with queue_full and writes nothing: the same command goes through once there is room', async () => {
    const fx = await openThread({ queue: { maxTurns: 2, maxBytes: 1_000 } });
    await fx.engine.submit(startTurn('th', 'q1', 'first'));
    await fx.engine.submit(startTurn('th', 'q2', 'second'));
    const before = await fx.engine.getThread('th');
    const third = startTurn('th', 'q3', 'third');
    for (const whileRunning of ['queue', 'interrupt'] as const) {
      const refused = await rejection(fx.engine.submit({ ...third, whileRunning }));
      expect([refused.code, refused.details]).toEqual(['queue_full', { threadId: 'th', waiting: 2, waitingBytes: 11, bytes: 5, maxTurns: 2, maxBytes: 1_000 }]);
      expect(refused.message).toContain('send it again once queued turns have run');
    }
    const after = await fx.engine.getThread('th');
    // The interrupt was refused with it: the open turn was not asked to stop.
    expect([after.seq, after.queue, after.turns.open!.interrupt]).toEqual([before.seq, before.queue, null]);
    expect(fx.store.readReceipt(third.commandId)).toBeUndefined();

    await runTurn(fx, 'open', { first: true });
    await fx.engine.submit(third);
    expect((await fx.engine.getThread('th')).queue.map(({ turnId }) => turnId)).toEqual(['q2', 'q3']);
  });

  it('counts the queue in bytes too: an input that would take it past the limit is refused, one larger than the limit says to send less', async () => {
    const fx = await openThread({ queue: { maxTurns: 100, maxBytes: 1_000 } });
    await fx.engine.submit(startTurn('th', 'q1', 'é'.repeat(300)));
    const seq = (await fx.engine.getThread('th')).seq;
    const over = await rejection(fx.engine.submit(startTurn('th', 'q2', 'x'.repeat(401))));
    expect([over.code, over.details.waitingBytes, over.details.bytes]).toEqual(['queue_full', 600, 401]);
    const huge = await rejection(fx.engine.submit(startTurn('th', 'q3', 'x'.repeat(1_001))));
    expect([huge.code, huge.message]).toEqual(['queue_full', expect.stringMatching(/takes 1001: send less$/)]);
    await fx.engine.submit(startTurn('th', 'q4', 'x'.repeat(400)));
    expect((await fx.engine.getThread('th')).seq).toBe(seq + 1);
  });

  it('bounds steered input no step took yet by the same limits, and keeps its text out of the turn row', async () => {
    const fx = await openThread({ queue: { maxTurns: 2, maxBytes: 300_000 } });
    const t = turnEvents('open');
    await fx.engine.submit(record('th', 'open', [t.sessionStarted(), t.started()]));
    const steer = (inputId: string, text: string) => fx.engine.submit({ ...startTurn('th', inputId, text), whileRunning: 'steer' });
    await steer('in-1', inputOf('in-1', 100_000));
    await steer('in-2', inputOf('in-2', 100_000));
    const seq = (await fx.engine.getThread('th')).seq;
    const third = { ...startTurn('th', 'in-3', 'and one more'), whileRunning: 'steer' as const };
    const refused = await rejection(fx.engine.submit(third));
    expect([refused.code, refused.details.turnId, refused.details.waiting]).toEqual(['queue_full', 'open', 2]);
    expect((await fx.engine.getThread('th')).seq).toBe(seq);

    // Once a step took what waited, there is room again.
    await fx.engine.submit(record('th', 'open', [{ type: 'input.claimed', turnId: 'open', inputIds: ['in-1', 'in-2'], step: 1 }, t.step(1)]));
    await fx.engine.submit(third);
    expect((await rejection(steer('in-4', 'x'.repeat(300_001)))).message).toMatch(/send less$/);
    await fx.engine.submit(record('th', 'open', [{ type: 'part.started', turnId: 'open', partId: 'p1', step: 1, kind: 'text' }]));
    for (let i = 0; i < 20; i++) await fx.engine.submit(record('th', 'open', [{ type: 'part.delta', turnId: 'open', partId: 'p1', text: `${i} ` }]));

    const inbox = fx.store.readTurn('th', 'open')!.inbox;
    expect(inbox.map(({ id, text }) => [id, text.length])).toEqual([
      ['in-1', 100_000],
      ['in-2', 100_000],
      ['in-3', 12],
    ]);
    await fx.engine.close();
    const env = open({ path: fx.dir, maxDbs: 16, readOnly: true });
    const row = env.openDB<TurnView, [string, string]>({ name: 'turns' }).get(['th', 'open'])!;
    await env.close();
    // The row is written with every commit into the turn: 200 KB of steered text in it would be written each time.
    expect(JSON.stringify(row).length).toBeLessThan(3_000);
    await fx.restart();
    expect(fx.store.readTurn('th', 'open')!.inbox).toEqual(inbox);
  });

  it('reads a folder written before queued inputs and steered texts were kept out of the rows, and converts it once', async () => {
    const fx = await openThread({});
    const t = turnEvents('open');
    await fx.engine.submit(record('th', 'open', [t.sessionStarted(), t.started()]));
    await fx.engine.submit({ ...startTurn('th', 'in-1', 'steered before the upgrade'), whileRunning: 'steer' });
    await fx.engine.submit(startTurn('th', 'q1', inputOf('q1', 50_000)));
    await fx.engine.submit(startTurn('th', 'q2', 'the second'));
    const view = await fx.engine.getThread('th');
    await fx.engine.close();

    // The old layout: each queue entry with its whole input, steered text in the turn row, no layout mark.
    const env = open({ path: fx.dir, maxDbs: 16 });
    const threads = env.openDB<ThreadHead, string>({ name: 'threads' });
    const turns = env.openDB<TurnView, [string, string]>({ name: 'turns' });
    const pieces = env.openDB({ name: 'turnPieces' });
    await env.transaction(() => {
      const head = threads.get('th')!;
      const texts: Record<string, string> = { q1: inputOf('q1', 50_000), q2: 'the second' };
      threads.put('th', { ...head, queue: head.queue.map(({ turnId, provider, mode, queuedAt }) => ({ turnId, input: { text: texts[turnId]! }, provider, mode, queuedAt })) as never });
      turns.put(['th', 'open'], { ...turns.get(['th', 'open'])!, inbox: view.turns.open!.inbox });
      for (const { key } of pieces.getRange({ start: ['th', 'open'], end: ['th', 'open', '\uffff'] })) if ((key as unknown[])[3] === 'inboxText') pieces.remove(key);
      env.openDB({ name: 'meta' }).remove('layout');
    });
    await env.close();

    await fx.restart();
    expect(fx.store.readView('th')).toEqual(view);
    expect(fx.store.readView('th')).toEqual(rebuildFromLog(fx.store, 'th'));
    await fx.engine.close();
    const converted = open({ path: fx.dir, maxDbs: 16, readOnly: true });
    const stored = { queue: converted.openDB<ThreadHead, string>({ name: 'threads' }).get('th')!.queue, layout: converted.openDB({ name: 'meta' }).get('layout') };
    await converted.close();
    expect(stored).toEqual({ queue: view.queue, layout: 3 });

    await fx.restart();
    // Steered input the turn settled without goes first, then the queue in order, each with its whole text.
    await runTurn(fx, 'open', { started: true });
    await runTurn(fx, 'open-steered');
    await runTurn(fx, 'q1');
    const after = await fx.engine.getThread('th');
    expect(after.turnIds).toEqual(['open', 'open-steered', 'q1', 'q2']);
    expect(['open-steered', 'q1', 'q2'].map((id) => after.turns[id]!.messages[0].parts[0]!.text)).toEqual(['steered before the upgrade', inputOf('q1', 50_000), 'the second']);
    expect(fx.store.readView('th')).toEqual(rebuildFromLog(fx.store, 'th'));
  });
});
