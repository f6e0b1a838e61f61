import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Folder, type RunResult, gitRepo, plainFolder, run, undoneAfterEach } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
const threadOf = (stderr: string) => /thread (thr_\w+) · mode [^·]+ · data /.exec(stderr)?.[1];

const undo = undoneAfterEach();
const start = undo.start;

function scriptFile(dir: string, name: string, steps: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ steps }));
  return path;
}

/**
 * Two threads in one data folder: B ran and completed; A's run was killed
 * with kill -9 while its command waited for an approval, so A's turn is
 * left open (and would wait for a person again if any worker took it).
 */
async function twoThreads(): Promise<{ workspace: Folder; base: string[]; threadA: string; threadB: string; scriptB: string; scriptA: string }> {
  const workspace = gitRepo();
  const data = plainFolder();
  undo.later(() => workspace.remove(), () => data.remove());
  const base = ['--cwd', workspace.path, '--data', join(data.path, 'state')];
  const scriptB = scriptFile(data.path, 'b.json', [[{ text: 'B answered.' }]]);
  const scriptA = scriptFile(data.path, 'a.json', [[{ toolCall: { name: 'bash', input: { command: 'echo ran >> ran.txt' } } }], [{ text: 'A ran it.' }]]);
  const first = await run(['run', 'thread B', ...base, '--script', scriptB], { cwd: workspace.path });
  expect(first.code, shown(first)).toBe(0);
  const threadB = threadOf(first.stderr)!;
  const killed = start(['run', 'thread A', ...base, '--script', scriptA, '--approve', 'ask'], { cwd: workspace.path });
  await killed.waitFor('stdout', '? allow bash echo ran >> ran.txt');
  killed.child.kill('SIGKILL');
  const threadA = threadOf((await killed.exited).stderr)!;
  return { workspace, base, threadA, threadB, scriptA, scriptB };
}

describe('a run drives its own thread only', () => {
  it('run --thread B finishes and exits although another thread has a turn left open by a killed run, which it leaves alone', { timeout: 90_000 }, async () => {
    const { workspace, base, threadA, threadB, scriptA, scriptB } = await twoThreads();
    const result = await start(['run', '--thread', threadB, 'again', ...base, '--script', scriptB], { cwd: workspace.path, deadlineMs: 20_000 }).exited;
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);
    expect(result.stdout).toContain('B answered.');
    // A's turn was not taken (nor interrupted as B's run stopped): A's own run finds it open and finishes it.
    const resumed = await run(['run', '--thread', threadA, 'thanks', ...base, '--script', scriptA, '--approve', 'auto'], { cwd: workspace.path });
    expect(resumed.code, shown(resumed)).toBe(0);
    expect(resumed.stdout).toContain('left open by a run that stopped, goes on first');
  });

  it('Ctrl-C once the turn has settled ends the run with that turn’s own exit code at once, with no "could not interrupt"', { timeout: 90_000 }, async () => {
    const { workspace, base, threadB, scriptB } = await twoThreads();
    const running = start(['run', '--thread', threadB, 'again', ...base, '--script', scriptB], { cwd: workspace.path, deadlineMs: 20_000 });
    await running.waitFor('stdout', 'B answered.').catch(() => undefined);
    running.child.kill('SIGINT');
    const result = await running.exited;
    expect(result.timedOut, shown(result)).toBe(false);
    // Settled before the interrupt reached it (completed, 0), or just as it did (interrupted, 130): either way the run ends.
    expect([0, 130], shown(result)).toContain(result.code);
    expect(result.stdout + result.stderr).not.toContain('could not interrupt');
  });
});
