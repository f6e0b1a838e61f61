import { describe, expect, it } from 'vitest';
import { capacitySuite } from '../../bench/capacityBench.ts';

/**
 * The capacity benchmark at its smallest (a few short paced turns, one
 * engine and two workers as processes of their own, on a private
 * nats-server): only that it runs end to end and answers every figure in
 * shape. No timing is judged: smoke figures carry `meetsTarget: null`.
 */
describe('bench smoke: capacity', () => {
  it('ramps streaming turns on one engine and reports capacity, its p99, receipts, events and bytes per turn', async () => {
    const figures = await capacitySuite.run({ smoke: true });
    expect(figures.map((figure) => figure.key)).toEqual(['capacity', 'capacityP99', 'receiptsAfterLoad', 'durableEventsPerStreamSecond', 'bytesPer20sTurn']);
    for (const figure of figures) {
      expect(Number.isFinite(figure.value), `${figure.key} = ${figure.value}`).toBe(true);
      expect(figure.value).toBeGreaterThanOrEqual(0);
      expect(figure.target).not.toBeNull();
      expect(figure.meetsTarget).toBeNull();
      if (figure.comparison) expect(figure.ratio).toBeCloseTo(figure.value / figure.comparison.value);
    }
    const receipts = figures.find((figure) => figure.key === 'receiptsAfterLoad')!;
    expect(receipts.comparison).toEqual({ label: 'the documented bound, 1,000 a thread', value: 4 * 1_000 });
    expect(receipts.value).toBeGreaterThan(0);
    // Two ramps, each starting an engine and two workers as processes: on a busy machine that alone takes a while.
  }, 180_000);
});
