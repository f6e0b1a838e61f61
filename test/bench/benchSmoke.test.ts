import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { engineSuite } from '../../bench/engineBench.ts';
import { clusterSuite } from '../../bench/clusterBench.ts';
import type { Figure } from '../../bench/figure.ts';
import { storeSuite } from '../../bench/storeBench.ts';
import { tempDir } from '../support/tempDir.ts';

/**
 * `npm run bench` at its smallest: every suite runs with tiny sizes and one
 * round, only to prove the code still runs and answers in the right shape.
 * No timing is judged here (smoke figures carry `meetsTarget: null`).
 */

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function expectFigures(figures: readonly Figure[], keys: readonly string[] | null): void {
  if (keys) expect(figures.map((figure) => figure.key)).toEqual(keys);
  expect(new Set(figures.map((figure) => figure.key)).size).toBe(figures.length);
  for (const figure of figures) {
    expect(Number.isFinite(figure.value) && figure.value > 0, `${figure.key} = ${figure.value}`).toBe(true);
    expect(figure.title.length).toBeGreaterThan(0);
    expect(figure.unit.length).toBeGreaterThan(0);
    if (figure.comparison) {
      expect(Number.isFinite(figure.comparison.value) && figure.comparison.value > 0, `${figure.key} comparison = ${figure.comparison.value}`).toBe(true);
      expect(figure.ratio).toBeCloseTo(figure.value / figure.comparison.value);
    } else expect(figure.ratio).toBeNull();
    // A smoke run never judges its targets.
    expect(figure.meetsTarget).toBeNull();
  }
}

describe('npm run bench, smoke', () => {
  it('engine: every figure, finite and positive', async () => {
    const figures = await engineSuite.run({ smoke: true });
    expectFigures(figures, ['engineCommand', 'commitLargeTurn', 'idleThreadHeap', 'rss5000', 'durableEventsPerReply', 'catchUpGap999', 'freshSnapshot10k', 'crashStart200']);
  });

  // The first run on a machine installs better-sqlite3 into bench/, which compiles from source: a couple of minutes, once.
  it('store: LMDB beside SQLite with 1 and 32 clients', { timeout: 300_000 }, async () => {
    const figures = await storeSuite.run({ smoke: true });
    expectFigures(figures, ['durable1', 'durable32']);
  });

  it('cluster: one engine on LMDB, one on JetStream R1, one and three on a 3-node nats-server cluster (R3)', { timeout: 180_000 }, async () => {
    const figures = await clusterSuite.run({ smoke: true });
    expectFigures(figures, ['clusterStartLmdb', 'clusterCommitLmdb', 'clusterStartR1', 'clusterCommitR1', 'clusterStartR3x1', 'clusterCommitR3x1', 'clusterStartR3x3', 'clusterCommitR3x3', 'clusterCpuR1', 'clusterCpuR3x1', 'clusterCpuR3x3', 'clusterConsumersIdle', 'clusterTakeover']);
  });

  it('run.ts --smoke --json engine: stdout is one JSON object of figures', async () => {
    const scratch = tempDir('turnloom-bench-smoke-');
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--json', 'engine'], {
        cwd: repoRoot,
        env: { ...process.env, TURNLOOM_BENCH_RESULTS: join(scratch.path, 'results.json') },
        timeout: 60_000,
      });
      const results = JSON.parse(stdout) as {
        machine: { cpus: number; cpuModel: string; memGiB: number; node: string; platform: string };
        startedAt: string;
        durationMs: number;
        figures: Record<string, Omit<Figure, 'key'>>;
      };
      expect(results.machine).toEqual({ cpus: expect.any(Number), cpuModel: expect.any(String), memGiB: expect.any(Number), node: process.version, platform: expect.any(String) });
      expect(Number.isNaN(Date.parse(results.startedAt))).toBe(false);
      expect(results.durationMs).toBeGreaterThan(0);
      expect(Object.keys(results.figures)).toContain('engineCommand');
      for (const figure of Object.values(results.figures)) {
        expect(Object.keys(figure).sort()).toEqual(['comparison', 'meetsTarget', 'note', 'ratio', 'target', 'title', 'unit', 'value']);
        expect(Number.isFinite(figure.value)).toBe(true);
      }
    } finally {
      scratch.remove();
    }
  });
});
