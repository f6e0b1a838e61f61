import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type RecordedStreamServer, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { existsSync } from 'node:fs';
import { type Folder, type RunResult, git, gitRepo, openAiEnv, plainFolder, run, undoneAfterEach, summaryOf } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

const undo = undoneAfterEach();
const start = undo.start;

function repo(): Folder {
  const folder = gitRepo();
  undo.later(() => folder.remove());
  return folder;
}
function folder(): Folder {
  const made = plainFolder();
  undo.later(() => made.remove());
  return made;
}
/**
 * Each turn: a command that notes it ran and then takes a while (the moment
 * the run is stopped), then an answer. A command that ran is one line in
 * `ran.txt`, so a command run twice shows.
 */
function slowCommandScript(dir: string): string {
  const path = join(dir, 'script.json');
  const script = {
    steps: [[{ text: 'Running the slow step.' }, { toolCall: { name: 'bash', input: { command: 'echo ran >> ran.txt; sleep 4' } } }], [{ text: 'The slow step is done.' }]],
  };
  writeFileSync(path, JSON.stringify(script));
  return path;
}

const ranLines = (workspace: string) => readFileSync(join(workspace, 'ran.txt'), 'utf8').split('\n').filter((line) => line === 'ran').length;
const threadOf = (stderr: string) => /thread (thr_\w+) · mode [^·]+ · data /.exec(stderr)?.[1];

describe('a run that was stopped can be continued', () => {
  it('after kill -9 mid-command: run --continue finishes the turn left open (its command is not run again) and then the new one', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const script = slowCommandScript(data.path);
    const args = ['--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--mode', 'full'];
    const first = start(['run', 'do the slow thing', ...args], { cwd: workspace.path });
    // The thread is named as soon as it exists, so a run killed at any moment can be continued by name.
    await first.waitFor('stderr', /thread thr_\w+ · mode [^·]+ · data /);
    // Killed once the command really ran (it noted so) and while it still runs.
    await expect.poll(() => existsSync(join(workspace.path, 'ran.txt')), { timeout: 20_000 }).toBe(true);
    first.child.kill('SIGKILL');
    await first.exited;
    const threadId = threadOf(first.stderr())!;

    const next = await run(['run', '--continue', 'go on', ...args, '--json'], { cwd: workspace.path });
    expect(next.code, shown(next)).toBe(0);
    const report = summaryOf(next.stdout) as { threadId: string; status: string; text: string; error: unknown };
    expect(report).toMatchObject({ threadId, status: 'completed', error: null });
    expect(next.stderr).toContain(`left open by a run that stopped, goes on first`);
    // The killed run's command and the new turn's: the one whose outcome was unknown never ran twice.
    await expect.poll(() => ranLines(workspace.path), { timeout: 10_000 }).toBe(2);

    const again = await run(['run', '--thread', threadId, 'and the last', ...args, '--json'], { cwd: workspace.path });
    expect(again.code, shown(again)).toBe(0);
    expect(summaryOf(again.stdout)).toMatchObject({ threadId, status: 'completed' });
  });

  it('after kill -9 while an approval waits: run --continue asks it again, and the approved command runs once', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const script = join(data.path, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'bash', input: { command: 'echo ran >> ran.txt' } } }], [{ text: 'Ran it.' }]] }));
    const args = ['--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--approve', 'ask'];
    const first = start(['run', 'run it', ...args], { cwd: workspace.path });
    await first.waitFor('stdout', '? allow bash echo ran >> ran.txt');
    first.child.kill('SIGKILL');
    await first.exited;

    const next = start(['run', '--continue', 'thanks', ...args], { cwd: workspace.path });
    await next.waitFor('stdout', 'goes on first');
    await next.waitFor('stdout', '? allow bash echo ran >> ran.txt');
    next.write('y\n');
    next.endInput();
    const result = await next.exited;
    expect(result.code, shown(result)).toBe(0);
    // Asked once more (for the new turn's own call, which the closed input denies), run once.
    expect(ranLines(workspace.path)).toBe(1);
  });

  it('after SIGTERM: the run settles the turn as Ctrl-C would (the command is stopped), and run --continue goes on', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const script = slowCommandScript(data.path);
    const args = ['--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--mode', 'full'];
    const first = start(['run', 'do the slow thing', ...args], { cwd: workspace.path });
    await first.waitFor('stdout', '▸ bash');
    await expect.poll(() => existsSync(join(workspace.path, 'ran.txt')), { timeout: 10_000 }).toBe(true);
    first.child.kill('SIGTERM');
    const stopped = await first.exited;
    expect(stopped.code, shown(stopped)).toBe(130);
    expect(stopped.stdout).toContain('interrupting… (SIGTERM again to quit at once)');
    expect(stopped.stdout).toMatch(/turn interrupted · thread thr_\w+/);

    const next = await run(['run', '--continue', 'go on', ...args, '--json'], { cwd: workspace.path });
    expect(next.code, shown(next)).toBe(0);
    expect(summaryOf(next.stdout)).toMatchObject({ threadId: threadOf(stopped.stderr), status: 'completed' });
    expect(next.stderr).not.toContain('goes on first');
    expect(ranLines(workspace.path)).toBe(2);
  });

  it('--continue with no thread to continue is one line, and creates nothing', { timeout: 60_000 }, async () => {
    const workspace = repo();
    const data = folder();
    const result = await run(['run', '--continue', 'go on', '--cwd', workspace.path, '--data', join(data.path, 'empty')], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(1);
    expect(result.stderr).toMatch(/^turnloom: no thread in .*empty to continue: run without --continue to start one$/m);
    expect(result.stderr).not.toMatch(/^\s*at /m);
  });
});

describe('where a run keeps its threads', () => {
  it('by default outside the workspace: the quick start leaves no database in any checkpoint and nothing untracked', { timeout: 60_000 }, async () => {
    const workspace = repo();
    const home = folder();
    const env = { XDG_DATA_HOME: home.path };
    const script = join(home.path, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ toolCall: { name: 'write', input: { path: 'note.txt', content: 'hi\n' } } }], [{ text: 'Wrote it.' }]] }));
    const result = await run(['run', 'write the note', '--script', script, '--mode', 'auto-edits'], { cwd: workspace.path, env });
    expect(result.code, shown(result)).toBe(0);
    // What the agent wrote, and nothing of turnloom's.
    expect(git(workspace.path, 'status', '--porcelain', '--untracked-files=all')).toBe("?? note.txt\n");
    const refs = git(workspace.path, 'for-each-ref', '--format=%(objectname)', 'refs/turnloom').split('\n').filter(Boolean);
    for (const ref of refs) expect(git(workspace.path, 'ls-tree', '-r', '--name-only', ref)).not.toMatch(/\.mdb|turnloom/);
    const data = /thread thr_\w+ · mode [^·]+ · data (\S+)/.exec(result.stderr)?.[1];
    expect(data?.startsWith(join(home.path, 'turnloom', 'workspaces'))).toBe(true);
    // And --continue finds the thread there without being told where.
    const next = await run(['run', '--continue', 'again', '--script', script, '--mode', 'auto-edits', '--json'], { cwd: workspace.path, env });
    expect(next.code, shown(next)).toBe(0);
    expect(summaryOf(next.stdout).threadId).toBe(threadOf(result.stderr));
  });
});

describe('a failed turn says why', () => {
  let server: RecordedStreamServer;
  afterEach(async () => server?.close());

  it('a key the provider refuses (401): the kind, the status, the provider’s words and what to do, in the terminal and in --json', { timeout: 60_000 }, async () => {
    server = await serveRecordedStream('openai-chat', [{ kind: 'status', status: 401, body: { error: { message: 'Incorrect API key provided: test-key', type: 'invalid_request_error', code: 'invalid_api_key' } } }]);
    const workspace = repo();
    const env = openAiEnv(server.baseURL);
    const shownRun = await run(['run', 'hello', '--data', join(folder().path, 'd')], { cwd: workspace.path, env });
    expect(shownRun.code, shown(shownRun)).toBe(1);
    expect(shownRun.stdout).toMatch(/turn failed · thread/);
    expect(shownRun.stdout).toMatch(/error: authentication \(HTTP 401\): .*Incorrect API key provided/);
    expect(shownRun.stdout).toContain('check OPENAI_API_KEY');

    const json = await run(['run', 'hello', '--json', '--data', join(folder().path, 'd')], { cwd: workspace.path, env });
    expect(summaryOf(json.stdout)).toMatchObject({
      status: 'failed',
      error: { kind: 'authentication', status: 401, message: expect.stringContaining('Incorrect API key'), provider: 'openai-chat', hint: expect.stringContaining('OPENAI_API_KEY') },
    });
  });

  it('a server that is not there: each retry as it happens, then the failure and where it looked', { timeout: 90_000 }, async () => {
    const workspace = repo();
    const result = await run(['run', 'hello', '--data', join(folder().path, 'd')], { cwd: workspace.path, env: openAiEnv('http://127.0.0.1:1/v1') });
    expect(result.code, shown(result)).toBe(1);
    expect(result.stdout).toMatch(/↻ retrying: connection .*attempt 2 of 5/);
    expect(result.stdout).toMatch(/error: connection: /);
    expect(result.stdout).toContain('is the server at http://127.0.0.1:1/v1 running and reachable? (from OPENAI_BASE_URL)');
  });
});
