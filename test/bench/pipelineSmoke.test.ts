import { describe, expect, it } from 'vitest';
import { busSuite } from '../../bench/busBench.ts';
import type { Figure, Suite } from '../../bench/figure.ts';
import { pipelineSuite } from '../../bench/pipelineBench.ts';
import { startupSuite } from '../../bench/startupBench.ts';

/**
 * The bus, pipeline and start-up benchmarks at their smallest (a few turns,
 * one round, each on its own private nats-server): only that they still run
 * end to end and answer every figure. No timing is judged: smoke figures
 * carry `meetsTarget: null`, and the machine is shared.
 */

const positive = (value: number | undefined) => value !== undefined && Number.isFinite(value) && value > 0;

async function smokeFigures(suite: Suite): Promise<Map<string, Figure>> {
  const figures = await suite.run({ smoke: true });
  for (const figure of figures) {
    expect(positive(figure.value), `${figure.key} = ${figure.value}`).toBe(true);
    expect(positive(figure.comparison?.value), `${figure.key} comparison = ${figure.comparison?.value}`).toBe(true);
    expect(figure.ratio).toBeCloseTo(figure.value / figure.comparison!.value);
    expect(figure.meetsTarget).toBeNull();
  }
  return new Map(figures.map((figure) => [figure.key, figure]));
}

describe('bench smoke: bus, pipeline, start-up', () => {
  it('bus: turn.start and thread.get over NATS beside raw request/reply', async () => {
    const figures = await smokeFigures(busSuite);
    expect([...figures.keys()]).toEqual(['turnStartNats16', 'threadGetNats16']);
  });

  it('pipeline: deltas from a provider to a subscriber, live and durable', async () => {
    const figures = await smokeFigures(pipelineSuite);
    expect([...figures.keys()]).toEqual(['pipelineDeltas100', 'liveP99x100', 'durableP99']);
    // The durable figure is held to the ingestion window plus 20 ms, whatever the window is.
    const durable = figures.get('durableP99')!;
    expect(durable.target).toEqual({ on: 'value', op: '<=', bound: durable.comparison!.value + 20 });
  });

  it('startup: turnloom serve as a child beside a bare NATS client, and the CLI (--version, --help, a run against a fake model) beside node -e 0', async () => {
    const figures = await smokeFigures(startupSuite);
    expect([...figures.keys()]).toEqual(['serveStart', 'versionStart', 'helpStart', 'runFirstRequest', 'runAnswerToExit']);
    for (const key of ['versionStart', 'helpStart', 'runFirstRequest', 'runAnswerToExit']) expect(figures.get(key)!.unit).toBe('s');
  });
});
