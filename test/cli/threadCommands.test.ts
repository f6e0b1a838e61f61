import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Folder, type RunResult, git, gitRepo, plainFolder, run, startRun } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal} timedOut ${result.timedOut}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
const threadOf = (stderr: string) => /thread (thr_\w+) · mode [^·]+ · data /.exec(stderr)?.[1];
/** A user's mistake or the world's: one line on standard error, nothing on standard output. */
const oneLine = (result: RunResult) => {
  expect(result.stdout, shown(result)).toBe('');
  expect(result.stderr.trim().split('\n'), shown(result)).toHaveLength(1);
  return result.stderr.trim();
};

/**
 * One repository, one thread of two turns run by `run` with no --data, so
 * every command here finds it in the folder `run` chose: turn 1 runs `ls`
 * (asked, allowed by --approve auto) and changes nothing; turn 2 writes
 * notes.txt. The XDG homes are the test's own.
 */
let workspace: Folder;
let home: Folder;
let threadId: string;
const env = () => ({ XDG_DATA_HOME: join(home.path, 'data'), XDG_CONFIG_HOME: join(home.path, 'config') });
const turnloom = (args: string[], cwd = workspace.path) => run(args, { cwd, env: env() });

function script(name: string, steps: unknown[]): string {
  const path = join(home.path, name);
  writeFileSync(path, JSON.stringify({ steps }));
  return path;
}

beforeAll(async () => {
  workspace = gitRepo();
  home = plainFolder();
  const look = script('look.json', [[{ text: 'Looking first.' }, { toolCall: { name: 'bash', input: { command: 'ls' } } }], [{ text: 'The folder is empty.' }]]);
  const write = script('write.json', [[{ toolCall: { name: 'write', input: { path: 'notes.txt', content: 'from the agent\n' } } }], [{ text: 'Wrote notes.txt.' }]]);
  const first = await turnloom(['run', 'look around the project', '--script', look, '--approve', 'auto']);
  expect(first.code, shown(first)).toBe(0);
  threadId = threadOf(first.stderr)!;
  const second = await turnloom(['run', '--continue', 'write the notes file', '--script', write, '--approve', 'auto']);
  expect(second.code, shown(second)).toBe(0);
  expect(readFileSync(join(workspace.path, 'notes.txt'), 'utf8')).toBe('from the agent\n');
}, 60_000);

afterAll(() => {
  workspace?.remove();
  home?.remove();
});

describe('thread commands on the folder run used', () => {
  it('threads lists the thread; show shows its turns, --request what the model was told, --json parses', { timeout: 60_000 }, async () => {
    // One after another: a data folder is one process's at a time, a reader's too.
    const threads = await turnloom(['threads']);
    const show = await turnloom(['show']);
    const request = await turnloom(['show', threadId, '--request']);
    const json = await turnloom(['show', '--json']);
    expect(threads.code, shown(threads)).toBe(0);
    expect(threads.stdout.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^${threadId}  idle  2 turns  (just now|\\d+ min ago)  [Ll]ook around the project$`))]);

    expect(show.code, shown(show)).toBe(0);
    for (const text of ['› look around the project', '› write the notes file', '• bash {"command":"ls"} → completed', '? bash ls — allowed', 'The folder is empty.', '• write {"path":"notes.txt"', 'changed 1 file (+1 -0): notes.txt (added)']) {
      expect(show.stdout).toContain(text);
    }
    // Without --request, no system prompt.
    expect(show.stdout).not.toContain('You are a coding agent');

    expect(request.code, shown(request)).toBe(0);
    expect(request.stdout).toContain('You are a coding agent');
    expect(request.stdout).toMatch(/context: agent build · .* · git \S+, clean/);
    // The second turn's prompt differs (its git status is not the first's) or is said to be the same: either way it is accounted for.
    expect(request.stdout.match(/system prompt/g)).toHaveLength(2);

    expect(json.code, shown(json)).toBe(0);
    const parsed = JSON.parse(json.stdout) as { thread: { id: string; turns: number }; turns: Array<{ input: string; state: string; toolCalls: Array<{ name: string; state: string }>; approvals: Array<{ decision: string }>; changes: unknown; request?: unknown }> };
    expect(parsed.thread).toMatchObject({ id: threadId, turns: 2 });
    expect(parsed.turns.map((turn) => [turn.input, turn.state, turn.toolCalls.map((call) => `${call.name} ${call.state}`)])).toEqual([
      ['look around the project', 'completed', ['bash completed']],
      ['write the notes file', 'completed', ['write completed']],
    ]);
    expect(parsed.turns[0]!.approvals).toMatchObject([{ decision: 'allowed' }]);
    expect(parsed.turns[0]!.changes).toBeNull();
    expect(parsed.turns[1]!.request).toBeUndefined();
  });

  it('undo refuses a file changed since (changing nothing), undoes the last turn with --force (saving the tree first); again: nothing left', { timeout: 60_000 }, async () => {
    const notes = join(workspace.path, 'notes.txt');
    writeFileSync(notes, 'edited by hand\n');
    const refused = await turnloom(['undo']);
    expect(refused.code).toBe(1);
    expect(oneLine(refused)).toBe('turnloom: undo: notes.txt was changed after the turn that last changed it: nothing was reverted; undo or keep those changes first, or run turnloom undo --force (the work tree is saved before a forced revert)');
    expect(readFileSync(notes, 'utf8')).toBe('edited by hand\n');

    // Forced, it goes through; the hand edit is in the work tree it saved first.
    const undone = await turnloom(['undo', '--force']);
    expect(undone.code, shown(undone)).toBe(0);
    expect(undone.stdout).toMatch(/^undid turn 2 \(turn_\w+\) "write the notes file": reverted 1 file: notes\.txt \(removed\)\n/);
    const saved = /the work tree before the undo is kept as refs\/turnloom\/\S+ \(commit ([0-9a-f]{12})\)/.exec(undone.stdout)?.[1];
    expect(saved, shown(undone)).toBeDefined();
    expect(git(workspace.path, 'show', `${saved}:notes.txt`)).toBe('edited by hand\n');
    expect(existsSync(notes)).toBe(false);
    expect(git(workspace.path, 'status', '--porcelain')).toBe('');

    // Each undo goes one turn further back, but the turn before wrote nothing.
    const again = await turnloom(['undo', threadId]);
    expect(again.code).toBe(1);
    expect(oneLine(again)).toMatch(/^turnloom: undo: nothing left to undo: turn 1 \(turn_\w+\) changed no files, and the turns after it are undone already$/);
  });

  it('an unknown thread, a --data folder that is not there, a folder that is no git repository: one line each', { timeout: 60_000 }, async () => {
    const plain = plainFolder();
    try {
      const ran = await run(['run', 'look', '--script', script('text.json', [[{ text: 'Hello.' }]])], { cwd: plain.path, env: env() });
      expect(ran.code, shown(ran)).toBe(0);
      // The first two read the repository's folder, the last the plain folder's: none waits for another.
      const [unknown, missing, notGit] = await Promise.all([turnloom(['show', 'thr_nope']), turnloom(['threads', '--data', join(home.path, 'nowhere')]), run(['undo'], { cwd: plain.path, env: env() })]);
      expect(unknown.code).toBe(1);
      expect(oneLine(unknown)).toMatch(/^turnloom: no thread thr_nope in \S+: see turnloom threads/);
      expect(missing.code).toBe(2);
      expect(oneLine(missing)).toBe(`turnloom: threads: --data ${join(home.path, 'nowhere')}: no such folder`);
      expect(existsSync(join(home.path, 'nowhere'))).toBe(false);
      expect(notGit.code).toBe(1);
      expect(oneLine(notGit)).toMatch(/^turnloom: undo: \S+ is not a git repository: its turns keep no checkpoints, so there is nothing to undo$/);
    } finally {
      plain.remove();
    }
  });

  it('a folder a run holds is refused at once, in one line', { timeout: 60_000 }, async () => {
    const data = join(home.path, 'busy');
    const asks = script('asks.json', [[{ toolCall: { name: 'bash', input: { command: 'echo hi' } } }], [{ text: 'Ran it.' }]]);
    const running = startRun(['run', 'ask first', '--data', data, '--script', asks, '--mode', 'ask', '--approve', 'ask'], { cwd: workspace.path, env: env() });
    try {
      await running.waitFor('stdout', '? allow bash echo hi');
      const busy = await turnloom(['threads', '--data', data]);
      expect(busy.code).toBe(1);
      expect(oneLine(busy)).toMatch(/^turnloom: data folder \S+ is in use by another turnloom process \(pid \d+ on .*\); stop it first, or use another data folder$/);
    } finally {
      running.child.kill('SIGKILL');
      await running.exited;
    }
  });
});
