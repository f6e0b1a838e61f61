import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Folder, type RunResult, gitRepo, plainFolder, run, summaryOf } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

function folders(): { workspace: Folder; data: Folder } {
  const workspace = gitRepo();
  const data = plainFolder();
  cleanup.push(() => workspace.remove(), () => data.remove());
  return { workspace, data };
}

describe('run for a CI job', () => {
  it('--timeout S interrupts the turn after S seconds and exits 124 with one line saying so', { timeout: 60_000 }, async () => {
    const { workspace, data } = folders();
    const script = join(data.path, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'bash', input: { command: 'sleep 30' } } }], [{ text: 'Slept.' }]] }));
    const args = ['--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--mode', 'full', '--json'];
    const result = await run(['run', 'sleep a long time', ...args, '--timeout', '1'], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(124);
    expect(result.stderr).toContain('turnloom: timed out after 1 s; the turn was interrupted\n');
    expect(summaryOf(result.stdout)).toMatchObject({ status: 'interrupted' });
  });

  it('run - reads the prompt from standard input, to its end', { timeout: 60_000 }, async () => {
    const { workspace, data } = folders();
    const args = ['--cwd', workspace.path, '--data', join(data.path, 'state'), '--json'];
    const result = await run(['run', '-', ...args], { cwd: workspace.path, input: 'fix the failing test\nin the parser\n' });
    expect(result.code, shown(result)).toBe(0);
    const report = summaryOf(result.stdout) as { title: string; status: string };
    expect(report.status).toBe('completed');
    // Both lines reached the turn: its title is made from them.
    expect(report.title).toMatch(/fix the failing test in the parser/i);
  });
});
