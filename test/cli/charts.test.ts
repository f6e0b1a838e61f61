import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCharts } from '../../cli/chartsCommand.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('turnloom charts', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('finds the committed charts and doc sections up to date', async () => {
    expect(await runCharts(root, true)).toEqual([]);
  });

  it('reports a stale chart with --check and mends it without', async () => {
    const copy = await mkdtemp(join(tmpdir(), 'turnloom-charts-'));
    dirs.push(copy);
    await cp(join(root, 'docs'), join(copy, 'docs'), { recursive: true });
    await cp(join(root, 'README.md'), join(copy, 'README.md'));
    await writeFile(join(copy, 'docs/charts/turn.mmd'), 'stateDiagram-v2\n');
    await rm(join(copy, 'docs/charts/approval.json'));

    expect((await runCharts(copy, true)).sort()).toEqual(['docs/charts/approval.json', 'docs/charts/turn.mmd']);
    expect(await readFile(join(copy, 'docs/charts/turn.mmd'), 'utf8')).toBe('stateDiagram-v2\n');
    expect((await runCharts(copy, false)).sort()).toEqual(['docs/charts/approval.json', 'docs/charts/turn.mmd']);
    expect(await runCharts(copy, true)).toEqual([]);
    expect(await readFile(join(copy, 'docs/charts/turn.mmd'), 'utf8')).toContain('interrupting_stepOpen');
  });

  it('writes charts that state every transition of the machine', async () => {
    const chart = await readFile(join(root, 'docs/charts/part.mmd'), 'utf8');
    expect(chart).toContain('running_tool_executing --> completed: tool.result');
    const json = JSON.parse(await readFile(join(root, 'docs/charts/part.json'), 'utf8'));
    expect(json.id).toBe('part');
    expect(json.states.running.states.tool.states.executing.on['tool.result']).toBe('#part.completed');
  });
});
