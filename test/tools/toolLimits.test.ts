import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findRipgrep } from '../../adapters/tools/ripgrep.ts';
import { walkFiles } from '../../adapters/tools/walkFiles.ts';
import { TempFolders, run, toolCall, toolsAt, writeTree } from './toolFixture.ts';

const ripgreps = (): Array<string | null> => {
  const rg = findRipgrep(process.env.PATH);
  return rg === null ? [null] : [null, rg];
};

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
    // The JS grep filters its files by the same glob.
    expect(await run(tools, 'grep', { pattern: 'x', glob: `${'*a'.repeat(14)}*b` })).toEqual({ output: 'no matches', isError: false });
    // Linear in the glob's length too, which is therefore bounded.
    expect((await run(tools, 'glob', { pattern: '*'.repeat(1_001) })).output).toMatch(/^invalid input for glob: pattern: .*1000/);
    expect((await run(tools, 'grep', { pattern: 'x', glob: '*'.repeat(1_001) })).output).toMatch(/^invalid input for grep: glob: .*1000/);
  });

  it('grep refuses a FIFO, a socket or a device named outright, with ripgrep and without, saying why', async () => {
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    for (const ripgrep of ripgreps()) {
      expect(await run(toolsAt(root, { ripgrep }), 'grep', { pattern: 'x', path: 'pipe' })).toEqual({ output: 'pipe is not a regular file', isError: true });
    }
  });

  it('a FIFO inside a folder blocks no walk: grep, glob and list pass over it', async () => {
    writeTree(root, { 'dir/a.txt': 'needle\n' });
    execFileSync('mkfifo', [path.join(root, 'dir', 'pipe')]);
    for (const ripgrep of ripgreps()) {
      expect(await run(toolsAt(root, { ripgrep }), 'grep', { pattern: 'needle' })).toEqual({ output: 'dir/a.txt:1:needle', isError: false });
      expect(await run(toolsAt(root, { ripgrep }), 'grep', { pattern: 'needle', path: 'dir', glob: 'p*' })).toEqual({ output: 'no matches', isError: false });
    }
    expect(await run(toolsAt(root), 'glob', { pattern: 'dir/*' })).toEqual({ output: 'dir/a.txt', isError: false });
    expect(await run(toolsAt(root), 'list', { path: 'dir' })).toEqual({ output: 'a.txt\npipe', isError: false });
    expect(await run(toolsAt(root), 'read', { path: 'dir/pipe' })).toEqual({ output: 'dir/pipe is not a regular file', isError: true });
  });

  it('a long walk gives the event loop its turns, so an interrupt raised meanwhile (as a SIGINT handler would) stops it', async () => {
    writeTree(root, { 'many/.keep': '' });
    manyFiles(root, 4_000);
    const interrupt = new AbortController();
    const seen: string[] = [];
    const walk = async () => {
      for await (const file of walkFiles(root, interrupt.signal)) {
        // Runs on the event loop's next turn: only if the walk gives it one before it ends.
        if (seen.push(file) === 1) setImmediate(() => interrupt.abort());
      }
    };
    await expect(walk()).rejects.toThrow(/abort/i);
    expect(seen.length).toBeLessThan(4_001);
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
      const result = await toolsAt(root, { ripgrep: null }).execute(toolCall(name, input), interrupt.signal);
      clearTimeout(timer);
      expect(result, name).toEqual({ output: 'interrupted', isError: true });
    }
  });

  it('a read-only call past its deadline ends with an error saying it ran out of time', async () => {
    writeTree(root, { 'many/.keep': '' });
    manyFiles(root, 4_000);
    const tools = toolsAt(root, { ripgrep: null, readOnlyTimeoutMs: 1 });
    expect(await run(tools, 'glob', { pattern: '**/*.txt' })).toEqual({ output: 'glob ran out of time after 1 ms; narrow its path or pattern', isError: true });
    expect(await run(tools, 'grep', { pattern: 'needle' })).toEqual({ output: 'grep ran out of time after 1 ms; narrow its path or pattern', isError: true });
  });
});
