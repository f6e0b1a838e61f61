import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

const lines = (count: number, text = (n: number) => `line ${n}`): string => Array.from({ length: count }, (_, index) => `${text(index + 1)}\n`).join('');

describe('file tools', () => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make();
  });
  afterEach(() => folders.removeAll());

  describe('read', () => {
    it('shows a file with cat -n style line numbers', async () => {
      writeTree(root, { 'src/a.ts': 'const a = 1;\n\nexport { a };\n' });
      expect(await run(toolsAt(root), 'read', { path: 'src/a.ts' })).toEqual({ output: '     1\tconst a = 1;\n     2\t\n     3\texport { a };\n', isError: false });
    });

    it('shows the asked line range and says which lines of how many', async () => {
      writeTree(root, { 'big.txt': lines(50) });
      const { output, isError } = await run(toolsAt(root), 'read', { path: 'big.txt', offset: 10, limit: 3 });
      expect(isError).toBe(false);
      expect(output).toBe('    10\tline 10\n    11\tline 11\n    12\tline 12\n[showing lines 10–12 of 50; use offset/limit]');
    });

    it('counts a last line without a newline and says when the offset is past the end', async () => {
      writeTree(root, { 'short.txt': 'one\ntwo', 'empty.txt': '' });
      const tools = toolsAt(root);
      expect((await run(tools, 'read', { path: 'short.txt' })).output).toBe('     1\tone\n     2\ttwo\n');
      expect((await run(tools, 'read', { path: 'short.txt', offset: 5 })).output).toBe('(short.txt has 2 lines; offset 5 is past its end)');
      expect((await run(tools, 'read', { path: 'empty.txt' })).output).toBe('(empty.txt is empty)');
    });

    it('reads only the first part of a file over maxReadBytes, and says what was cut', async () => {
      writeTree(root, { 'big.txt': lines(5_000) });
      const { output, isError } = await run(toolsAt(root, { maxReadBytes: 1_000 }), 'read', { path: 'big.txt' });
      expect(isError).toBe(false);
      expect(output).toMatch(/^ {5}1\tline 1\n/);
      const [, last] = /\[showing lines 1–(\d+) of 5000; use offset\/limit\]$/.exec(output) ?? [];
      expect(Number(last)).toBeGreaterThan(50);
      expect(Number(last)).toBeLessThan(200);
      expect(output).toContain(`\t${`line ${last}`}\n[showing`);
      const next = await run(toolsAt(root, { maxReadBytes: 1_000 }), 'read', { path: 'big.txt', offset: 4_990 });
      expect(next.output).toBe(`${lines(11, (n) => `${String(4_989 + n).padStart(6)}\tline ${4_989 + n}`)}[showing lines 4990–5000 of 5000; use offset/limit]`);
    });

    it('shows a single line longer than maxReadBytes cut short, and says so', async () => {
      writeTree(root, { 'minified.js': `${'x'.repeat(5_000)}\nsecond\n` });
      const { output } = await run(toolsAt(root, { maxReadBytes: 1_000 }), 'read', { path: 'minified.js' });
      expect(output).toBe(`     1\t${'x'.repeat(1_000)}\n[showing lines 1–1 of 2; line 1 is cut short; use offset/limit]`);
    });

    it('keeps a read within the output cap by showing fewer lines, never cutting the middle out', async () => {
      writeTree(root, { 'long.txt': lines(1_000) });
      const { output } = await run(toolsAt(root, { maxOutputChars: 600 }), 'read', { path: 'long.txt' });
      expect(output.length).toBeLessThanOrEqual(600);
      expect(output).not.toContain('characters cut');
      expect(output).toMatch(/\[showing lines 1–\d+ of 1000; use offset\/limit\]$/);
    });

    it('refuses binary files and folders with a message saying what to do', async () => {
      writeTree(root, { 'image.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02]), 'src/a.ts': '' });
      const tools = toolsAt(root);
      expect(await run(tools, 'read', { path: 'image.png' })).toEqual({ output: 'image.png looks binary (it has NUL bytes); read shows text files only', isError: true });
      expect(await run(tools, 'read', { path: 'src' })).toEqual({ output: 'src is a directory; use list to see what is in it', isError: true });
      expect(await run(tools, 'read', { path: 'missing.ts' })).toEqual({ output: 'no such file: missing.ts', isError: true });
    });
  });

  describe('write', () => {
    it('creates missing folders and says how many bytes it wrote', async () => {
      const result = await run(toolsAt(root), 'write', { path: 'deep/er/file.txt', content: 'héllo\n' });
      expect(result).toEqual({ output: 'wrote 7 bytes to deep/er/file.txt', isError: false });
      expect(readFileSync(path.join(root, 'deep/er/file.txt'), 'utf8')).toBe('héllo\n');
    });

    it('replaces an existing file and takes an absolute path inside the root', async () => {
      writeTree(root, { 'a.txt': 'old' });
      expect((await run(toolsAt(root), 'write', { path: path.join(root, 'a.txt'), content: 'new' })).output).toBe('wrote 3 bytes to a.txt');
      expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('new');
    });
  });

  describe('edit', () => {
    it('replaces text that occurs once, keeping `$` patterns in the new text literal', async () => {
      writeTree(root, { 'a.ts': 'const a = 1;\nconst b = 2;\n' });
      expect(await run(toolsAt(root), 'edit', { path: 'a.ts', oldText: 'const b = 2;', newText: "const b = '$&';" })).toEqual({ output: 'replaced 1 occurrence in a.ts', isError: false });
      expect(readFileSync(path.join(root, 'a.ts'), 'utf8')).toBe("const a = 1;\nconst b = '$&';\n");
    });

    it('refuses text that is not there, and text that is there more than once unless replaceAll is set', async () => {
      writeTree(root, { 'a.ts': 'x = 1; x = 2; x = 3;\n' });
      const tools = toolsAt(root);
      expect(await run(tools, 'edit', { path: 'a.ts', oldText: 'y = 1', newText: 'z' })).toEqual({ output: 'oldText not found in a.ts', isError: true });
      expect(await run(tools, 'edit', { path: 'a.ts', oldText: 'x = ', newText: 'y = ' })).toEqual({
        output: 'oldText occurs 3 times in a.ts; give more context or set replaceAll',
        isError: true,
      });
      expect(readFileSync(path.join(root, 'a.ts'), 'utf8')).toBe('x = 1; x = 2; x = 3;\n');
      expect(await run(tools, 'edit', { path: 'a.ts', oldText: 'x = ', newText: 'y = ', replaceAll: true })).toEqual({ output: 'replaced 3 occurrences in a.ts', isError: false });
      expect(readFileSync(path.join(root, 'a.ts'), 'utf8')).toBe('y = 1; y = 2; y = 3;\n');
    });

    it('refuses a file that does not exist, without creating it', async () => {
      expect(await run(toolsAt(root), 'edit', { path: 'ghost.ts', oldText: 'a', newText: 'b' })).toEqual({ output: 'no such file: ghost.ts', isError: true });
      expect(() => readFileSync(path.join(root, 'ghost.ts'))).toThrow(/ENOENT/);
    });
  });

  describe('list', () => {
    it('lists sorted entries, folders with a trailing slash, without .git', async () => {
      writeTree(root, { 'b.txt': '', 'a/x.ts': '', '.git/HEAD': '', '.env': '', 'c/d/e.txt': '' });
      const tools = toolsAt(root);
      expect(await run(tools, 'list', {})).toEqual({ output: '.env\na/\nb.txt\nc/', isError: false });
      expect((await run(tools, 'list', { path: 'c' })).output).toBe('d/');
      expect(await run(tools, 'list', { path: 'b.txt' })).toEqual({ output: 'not a directory: b.txt', isError: true });
    });

    it('caps a long listing at a thousand entries and says how many more there are', async () => {
      for (let index = 0; index < 1_010; index += 1) writeFileSync(path.join(root, `f${String(index).padStart(4, '0')}`), '');
      const { output } = await run(toolsAt(root, { maxOutputChars: 100_000 }), 'list', {});
      expect(output.split('\n')).toHaveLength(1_001);
      expect(output).toMatch(/f0999\n\[\.\.\. 10 more entries\]$/);
    });
  });

  it('cuts any output over maxOutputChars, keeping its start and end and saying how much was cut', async () => {
    for (let index = 0; index < 200; index += 1) writeFileSync(path.join(root, `file-${String(index).padStart(3, '0')}.txt`), '');
    const { output, isError } = await run(toolsAt(root, { maxOutputChars: 300 }), 'list', {});
    expect(isError).toBe(false);
    expect(output.length).toBeLessThanOrEqual(300);
    expect(output).toMatch(/^file-000\.txt\n/);
    expect(output).toMatch(/file-199\.txt$/);
    expect(output).toMatch(/\n\[\.\.\. \d+ characters cut \.\.\.\]\n/);
  });
});
