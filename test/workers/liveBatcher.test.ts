import { setImmediate as nextCheckPhase } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InProcessHub, MSGPACK } from '../../bus/index.ts';
import type { Bus } from '../../domain/index.ts';
import { decodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';
import { LiveBatcher } from '../../services/worker/liveBatcher.ts';

const SUBJECT = 'lb.v1.live.th1';

const delta = (text: string, kind: LiveDelta['kind'] = 'text'): LiveDelta => ({ turnId: 'turn1', step: 1, partId: 'turn1-s1-1', kind, text });

/** Immediates waiting in this process: a batcher must leave none behind once its turn is over. */
const pendingImmediates = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Immediate').length;

let bus: Bus;
afterEach(async () => {
  await bus.close();
});

/**
 * A real in-process bus whose publishes are recorded as they happen
 * (synchronously, so a batch sent early is seen before the loop turn ends),
 * each decoded; only those the bus accepted count.
 */
function recordedBus(): { batches: LiveDelta[][]; sent: Array<{ subject: string; headers: Record<string, string> | undefined }> } {
  bus = new InProcessHub().connect();
  const batches: LiveDelta[][] = [];
  const sent: Array<{ subject: string; headers: Record<string, string> | undefined }> = [];
  const publish = bus.publish.bind(bus);
  vi.spyOn(bus, 'publish').mockImplementation((subject, data, options) => {
    publish(subject, data, options);
    batches.push(decodeLiveBatch(data));
    sent.push({ subject, headers: options?.headers });
  });
  return { batches, sent };
}

describe('LiveBatcher', () => {
  it('sends what one iteration of the event loop produced as one message, in order, at its check phase', async () => {
    const { batches, sent: published } = recordedBus();
    const batcher = new LiveBatcher(bus, SUBJECT);
    const sent = Array.from({ length: 50 }, (_, i) => delta(`d${i} `, i % 3 === 0 ? 'reasoning' : 'text'));
    for (const one of sent) batcher.add(one);
    expect(batches).toEqual([]);
    await nextCheckPhase();
    expect(batches).toEqual([sent]);
    expect(published).toEqual([{ subject: SUBJECT, headers: { 'content-type': MSGPACK } }]);
    batcher.close();
    expect(batches).toHaveLength(1);
  });

  it('never holds a delta past the next check phase: deltas of separate iterations go separately', async () => {
    const { batches } = recordedBus();
    const batcher = new LiveBatcher(bus, SUBJECT);
    batcher.add(delta('a'));
    await nextCheckPhase();
    expect(batches).toEqual([[delta('a')]]);
    batcher.add(delta('b'));
    batcher.add(delta('c'));
    await nextCheckPhase();
    batcher.add(delta('d'));
    await nextCheckPhase();
    expect(batches).toEqual([[delta('a')], [delta('b'), delta('c')], [delta('d')]]);
    batcher.close();
  });

  it('sends a full batch at once: 256 deltas by default, or 64 KiB of text, or the limits given', async () => {
    const { batches } = recordedBus();
    const batcher = new LiveBatcher(bus, SUBJECT);
    const sent = Array.from({ length: 600 }, (_, i) => delta(String(i)));
    for (const one of sent) batcher.add(one);
    // Two full batches went out as they filled; the rest waits for the check phase.
    expect(batches.map((batch) => batch.length)).toEqual([256, 256]);
    await nextCheckPhase();
    expect(batches.map((batch) => batch.length)).toEqual([256, 256, 88]);
    expect(batches.flat()).toEqual(sent);

    batches.length = 0;
    batcher.add(delta('x'.repeat(40_000)));
    batcher.add(delta('y'.repeat(30_000)));
    expect(batches.map((batch) => batch.map((one) => one.text.length))).toEqual([[40_000, 30_000]]);
    batcher.close();

    batches.length = 0;
    const small = new LiveBatcher(bus, SUBJECT, { maxDeltas: 3, maxChars: 10 });
    for (const text of ['ab', 'cd', 'ef', 'g', 'hijklmnopq', 'r']) small.add(delta(text));
    expect(batches.map((batch) => batch.map((one) => one.text))).toEqual([['ab', 'cd', 'ef'], ['g', 'hijklmnopq']]);
    await nextCheckPhase();
    expect(batches.map((batch) => batch.map((one) => one.text))).toEqual([['ab', 'cd', 'ef'], ['g', 'hijklmnopq'], ['r']]);
    small.close();
  });

  it('sends what is pending when closed, leaves nothing scheduled, and drops a delta that comes after', async () => {
    const { batches } = recordedBus();
    const batcher = new LiveBatcher(bus, SUBJECT);
    const before = pendingImmediates();
    batcher.add(delta('last '));
    batcher.add(delta('words'));
    expect(pendingImmediates()).toBe(before + 1);
    batcher.close();
    expect(pendingImmediates()).toBe(before);
    expect(batches).toEqual([[delta('last '), delta('words')]]);
    batcher.add(delta('too late'));
    expect(pendingImmediates()).toBe(before);
    await nextCheckPhase();
    expect(batches).toHaveLength(1);
  });

  it('is best effort: a bus that refuses the message costs the batch, never the turn', async () => {
    const { batches } = recordedBus();
    const batcher = new LiveBatcher(bus, SUBJECT);
    await bus.close();
    batcher.add(delta('lost'));
    // The publish throws inside the immediate; an escaping error would fail this test as an uncaught exception.
    await nextCheckPhase();
    batcher.add(delta('lost too'));
    expect(() => batcher.close()).not.toThrow();
    expect(batches).toEqual([]);
  });
});
