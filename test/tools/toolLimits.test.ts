import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TempFolders, run, toolCall, toolsAt, writeTree } from './toolFixture.ts';

/** The ripgrep processes this process started that are still there. */
function ripgrepChildren(): number[] {
  const children: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    const stat = (() => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        return null;
      }
    })();
    // pid (comm) state ppid …: the comm may hold spaces, so read from its closing parenthesis.
    const match = stat === null ? null : /\((.*)\) \S+ (\d+)/.exec(stat);
    if (match !== null && match[1] === 'rg' && Number(match[2]) === process.pid) children.push(Number(pid));
  }
  return children;
}

async function untilNoRipgrepChildren(): Promise<void> {
  while (ripgrepChildren().length > 0) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Many files in one folder: a walk long enough to be interrupted, with no folder read in between. */
function manyFiles(root: string, count: number): void {
  for (let index = 0; index < count; index += 1) writeFileSync(path.join(root, 'many', `file-${index}.txt`), 'needle\n');
}

describe('read-only tools end: in linear time, at their deadline, on an interrupt, and never block on a FIFO', () => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make('turnloom-limits-');
  });
  afterEach(() => folders.removeAll());

  it('a glob that backtracking takes exponential time on is answered, correctly', async () => {
    writeTree(root, { [`names/${'a'.repeat(60)}`]: '', [`names/${'a'.repeat(30)}b`]: '' });
    const tools = toolsAt(root, { readOnlyTimeoutMs: 300_000 });
    const pathological = `names/${'*a'.repeat(14)}*b`;
    expect(await run(tools, 'glob', { pattern: pathological })).toEqual({ output: `names/${'a'.repeat(30)}b`, isError: false });
    expect(await run(tools, 'glob', { pattern: `names/${'*a'.repeat(14)}*c` })).toEqual({ output: `no files match names/${'*a'.repeat(14)}*c`, isError: false });
    // grep's glob is matched the same way.
    writeTree(root, { [`names/x${'a'.repeat(30)}b`]: 'x\n' });
    expect(await run(tools, 'grep', { pattern: 'x', glob: `${'*a'.repeat(14)}*b` })).toEqual({ output: `names/x${'a'.repeat(30)}b:1:x`, isError: false });
    expect(await run(tools, 'grep', { pattern: 'x', glob: `${'*a'.repeat(14)}*c` })).toEqual({ output: 'no matches', isError: false });
    // The glob's length is bounded: each path's cost grows with it.
    expect((await run(tools, 'glob', { pattern: '*'.repeat(1_001) })).output).toMatch(/^invalid input for glob: pattern: .*1000/);
    expect((await run(tools, 'grep', { pattern: 'x', glob: '*'.repeat(1_001) })).output).toMatch(/^invalid input for grep: glob: .*1000/);
  });

  it('grep refuses a FIFO, a socket or a device named outright, saying why', async () => {
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await run(toolsAt(root), 'grep', { pattern: 'x', path: 'pipe' })).toEqual({ output: 'pipe is not a regular file', isError: true });
  });

  it('a FIFO inside a folder blocks no walk: grep, glob and list pass over it', async () => {
    writeTree(root, { 'dir/a.txt': 'needle\n' });
    execFileSync('mkfifo', [path.join(root, 'dir', 'pipe')]);
    expect(await run(toolsAt(root), 'grep', { pattern: 'needle' })).toEqual({ output: 'dir/a.txt:1:needle', isError: false });
    expect(await run(toolsAt(root), 'grep', { pattern: 'needle', path: 'dir', glob: 'p*' })).toEqual({ output: 'no matches', isError: false });
    expect(await run(toolsAt(root), 'glob', { pattern: 'dir/*' })).toEqual({ output: 'dir/a.txt', isError: false });
    expect(await run(toolsAt(root), 'list', { path: 'dir' })).toEqual({ output: 'a.txt\npipe', isError: false });
    expect(await run(toolsAt(root), 'read', { path: 'dir/pipe' })).toEqual({ output: 'dir/pipe is not a regular file', isError: true });
  });

  it('a long walk leaves the event loop its turns, so an interrupt raised meanwhile (as a SIGINT handler would) stops it, and the ripgrep it runs', async () => {
    writeTree(root, { 'many/.keep': '' });
    manyFiles(root, 4_000);
    for (const [name, input] of [
      ['glob', { pattern: '**/*.txt' }],
      ['grep', { pattern: 'needle' }],
      ['grep', { pattern: 'needle', glob: '*.txt' }],
    ] as const) {
      const interrupt = new AbortController();
      let turns = 0;
      const call = toolsAt(root).execute(toolCall(name, input), interrupt.signal);
      // Each await here is a turn of the event loop that the walk must leave free: the interrupt comes on the second.
      while (turns < 2) {
        await nextTurn();
        turns += 1;
      }
      interrupt.abort();
      expect(await call, name).toEqual({ output: 'interrupted', isError: true });
      await untilNoRipgrepChildren();
    }
  });

  it('an interrupt during a call ends it, whatever the tool is doing', async () => {
    writeTree(root, { 'many/.keep': '' });
    manyFiles(root, 4_000);
    for (const [name, input] of [
      ['glob', { pattern: '**/*.txt' }],
      ['grep', { pattern: 'needle' }],
      ['list', { path: 'many' }],
    ] as const) {
      const interrupt = new AbortController();
      const timer = setTimeout(() => interrupt.abort(), 0);
      const result = await toolsAt(root).execute(toolCall(name, input), interrupt.signal);
      clearTimeout(timer);
      expect(result, name).toEqual({ output: 'interrupted', isError: true });
    }
  });

  it('a read-only call past its deadline ends with an error saying it ran out of time', async () => {
    writeTree(root, { 'many/.keep': '' });
    manyFiles(root, 4_000);
    const tools = toolsAt(root, { readOnlyTimeoutMs: 1 });
    expect(await run(tools, 'glob', { pattern: '**/*.txt' })).toEqual({ output: 'glob ran out of time after 1 ms; narrow its path or pattern', isError: true });
    expect(await run(tools, 'grep', { pattern: 'needle' })).toEqual({ output: 'grep ran out of time after 1 ms; narrow its path or pattern', isError: true });
  });
});
