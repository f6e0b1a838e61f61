import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Folder, type RunResult, git, gitRepo, plainFolder, run, summaryOf } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

let cleanup: Folder[] = [];
afterEach(() => {
  for (const folder of cleanup.splice(0)) folder.remove();
});
const made = (folder: Folder) => {
  cleanup.push(folder);
  return folder;
};

/** A script whose one tool call writes `count` one-line files into an untracked node_modules (an `npm install`), then says done. */
function installScript(count: number): string {
  const body = `const fs = require('fs'); for (let i = 0; i < ${count}; i++) { const dir = 'node_modules/p' + Math.floor(i / 100); if (i % 100 === 0) fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(dir + '/f' + i + '.js', 'module.exports = ' + i + ';\\n'); }`;
  const command = `${JSON.stringify(process.execPath)} -e ${JSON.stringify(body)}`;
  const file = join(made(plainFolder()).path, 'install.json');
  writeFileSync(file, JSON.stringify({ steps: [[{ toolCall: { name: 'bash', input: { command } } }], [{ text: 'installed' }]] }));
  return file;
}

describe('turnloom run on a turn that changes thousands of files', () => {
  it('12,000 files: completes, prints the totals and says how many files the list leaves out', { timeout: 90_000 }, async () => {
    const workspace = made(gitRepo());
    const result = await run(['run', 'npm install', '--cwd', workspace.path, '--script', installScript(12_000), '--approve', 'auto'], { cwd: workspace.path });
    expect(result.timedOut, shown(result)).toBe(false);
    expect(result.code, shown(result)).toBe(0);
    expect(result.stdout).toMatch(/turn completed/);
    expect(result.stdout).toMatch(/checkpoint \S+: 12000 files changed, \+12000 −0/);
    expect(result.stdout).toMatch(/\n {2}… and \d+ more files? not listed\n/);
    expect(result.stderr).not.toMatch(/TypeError|^\s*at /m);
  });

  it('8,000 files with --json: the report totals them all and lists the first ones', { timeout: 90_000 }, async () => {
    const workspace = made(gitRepo());
    const result = await run(['run', 'npm install', '--cwd', workspace.path, '--script', installScript(8_000), '--approve', 'auto', '--json'], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(0);
    const report = summaryOf(result.stdout) as { status: string; checkpoint: { files: Array<{ path: string }>; filesChanged: number; filesOmitted: number; additions: number; deletions: number } };
    expect(report.status).toBe('completed');
    expect(report.checkpoint).toMatchObject({ filesChanged: 8_000, additions: 8_000, deletions: 0 });
    expect(report.checkpoint.files.length).toBeGreaterThan(0);
    expect(report.checkpoint.files.length + report.checkpoint.filesOmitted).toBe(8_000);
    expect(report.checkpoint.files[0]!.path).toBe('node_modules/p0/f0.js');
  });

  it('--data inside the repository: no checkpoint holds the database', { timeout: 90_000 }, async () => {
    const workspace = made(gitRepo());
    const script = join(made(plainFolder()).path, 'write.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'write', input: { path: 'src/a.txt', content: 'x\n' } } }], [{ text: 'done' }]] }));
    const result = await run(['run', 'write it', '--cwd', workspace.path, '--data', '.turnloom/run', '--script', script, '--approve', 'auto', '--json'], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(0);
    const report = summaryOf(result.stdout) as { checkpoint: { files: Array<{ path: string }> } };
    expect(report.checkpoint.files.map((file) => file.path)).toEqual(['src/a.txt']);
    const refs = git(workspace.path, 'for-each-ref', '--format=%(objectname)', 'refs/turnloom').trim().split('\n');
    expect(refs).toHaveLength(2);
    for (const commit of refs) expect(git(workspace.path, 'ls-tree', '-r', '--name-only', commit).split('\n').filter(Boolean)).not.toContainEqual(expect.stringMatching(/^\.turnloom\//));
  });
});
