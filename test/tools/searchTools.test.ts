import { symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

/** A tree with what trips searches up: `a/` beside `a.txt`, dotfiles, `.git`, `node_modules`, binaries, symlinks, `:` in lines. */
const tree = {
  'a/x.ts': 'export const needle = 1;\n',
  'a.txt': 'needle in a.txt\nNEEDLE shouting\n',
  'src/app.ts': 'import { needle } from "../a/x.ts";\nconst url = "http://needle:8080";\n',
  'src/deep/er/view.tsx': 'export const View = () => needle;\n',
  'src/deep/er/style.css': '.needle { color: red }\n',
  'src/[id]/page.tsx': 'needle page\n',
  '.hidden/config.ts': 'needle hidden\n',
  '.env': 'NEEDLE=1\n',
  '.git/config': 'needle in git\n',
  'node_modules/pkg/index.ts': 'needle in deps\n',
  'src/node_modules/inner.ts': 'needle in nested deps\n',
  'bin/data.bin': Buffer.concat([Buffer.from('needle before a NUL\n'), Buffer.from([0, 1, 2]), Buffer.from('\nneedle after\n')]),
  'notes/unicode.md': 'naïve needle ✓ 😀\n',
  'notes/crlf.txt': 'needle with crlf\r\nplain\r\n',
  'notes/no-newline.txt': 'last needle',
};

describe('search tools', () => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make();
    writeTree(root, tree);
    symlinkSync(path.join(root, 'a.txt'), path.join(root, 'link-to-a.txt'));
    symlinkSync(path.join(root, 'src'), path.join(root, 'link-to-src'));
  });
  afterEach(() => folders.removeAll());

  describe('glob', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['** across folders', { pattern: '**/*.ts' }, '.hidden/config.ts\na/x.ts\nsrc/app.ts'],
      ['* within one folder', { pattern: '*.txt' }, 'a.txt'],
      ['{a,b} alternatives', { pattern: 'src/**/*.{tsx,css}' }, 'src/[id]/page.tsx\nsrc/deep/er/style.css\nsrc/deep/er/view.tsx'],
      ['? for one character', { pattern: 'a/?.ts' }, 'a/x.ts'],
      ['a/**/b matching no folder in between', { pattern: 'src/**/app.ts' }, 'src/app.ts'],
      ['brackets taken literally', { pattern: 'src/[id]/*' }, 'src/[id]/page.tsx'],
      ['dotfiles', { pattern: '.*' }, '.env'],
      ['a starting folder', { pattern: '**/*.tsx', path: 'src/deep' }, 'src/deep/er/view.tsx'],
    ];
    it.each(cases)('matches %s', async (_, input, expected) => {
      expect(await run(toolsAt(root), 'glob', input)).toEqual({ output: expected, isError: false });
    });

    it('skips .git and node_modules, says when nothing matches, and caps long results saying how many more', async () => {
      const tools = toolsAt(root, { maxOutputChars: 100_000 });
      expect((await run(tools, 'glob', { pattern: '**/config' })).output).toBe('no files match **/config');
      expect((await run(tools, 'glob', { pattern: '**/index.ts' })).output).toBe('no files match **/index.ts');
      writeTree(root, Object.fromEntries(Array.from({ length: 1_005 }, (_, index) => [`many/f${String(index).padStart(4, '0')}.log`, ''])));
      const { output } = await run(tools, 'glob', { pattern: 'many/*.log' });
      expect(output.split('\n')).toHaveLength(1_001);
      expect(output).toMatch(/many\/f0999\.log\n\[\.\.\. 5 more paths\]$/);
    });
  });

  describe('grep', () => {
    const everyNeedle = [
      '.hidden/config.ts:1:needle hidden',
      'a/x.ts:1:export const needle = 1;',
      'a.txt:1:needle in a.txt',
      'notes/crlf.txt:1:needle with crlf\r',
      'notes/no-newline.txt:1:last needle',
      'notes/unicode.md:1:naïve needle ✓ 😀',
      'src/[id]/page.tsx:1:needle page',
      'src/app.ts:1:import { needle } from "../a/x.ts";',
      'src/app.ts:2:const url = "http://needle:8080";',
      'src/deep/er/style.css:1:.needle { color: red }',
      'src/deep/er/view.tsx:1:export const View = () => needle;',
    ];
    const queries: Array<[Record<string, unknown>, string[]]> = [
      [{ pattern: 'needle' }, everyNeedle],
      [{ pattern: 'needle', ignoreCase: true }, ['.env:1:NEEDLE=1', ...everyNeedle.slice(0, 3), 'a.txt:2:NEEDLE shouting', ...everyNeedle.slice(3)]],
      [{ pattern: 'needle', glob: '*.ts' }, ['.hidden/config.ts:1:needle hidden', 'a/x.ts:1:export const needle = 1;', 'src/app.ts:1:import { needle } from "../a/x.ts";', 'src/app.ts:2:const url = "http://needle:8080";']],
      [{ pattern: 'needle', glob: 'src/**/*.tsx' }, ['src/[id]/page.tsx:1:needle page', 'src/deep/er/view.tsx:1:export const View = () => needle;']],
      [{ pattern: 'needle', glob: 'src/[id]/*' }, ['src/[id]/page.tsx:1:needle page']],
      [{ pattern: 'needle', glob: '*.{md,txt}' }, ['a.txt:1:needle in a.txt', 'notes/crlf.txt:1:needle with crlf\r', 'notes/no-newline.txt:1:last needle', 'notes/unicode.md:1:naïve needle ✓ 😀']],
      [{ pattern: 'needle', glob: '!*.{ts,tsx}', path: 'src' }, ['src/deep/er/style.css:1:.needle { color: red }']],
      [{ pattern: 'needle', path: 'src', glob: 'deep/**' }, ['src/deep/er/style.css:1:.needle { color: red }', 'src/deep/er/view.tsx:1:export const View = () => needle;']],
      [{ pattern: 'needle', path: 'link-to-src', glob: '*.css' }, ['link-to-src/deep/er/style.css:1:.needle { color: red }']],
      [{ pattern: 'needle', path: 'a.txt' }, ['a.txt:1:needle in a.txt']],
      [{ pattern: 'needle', path: 'a.txt', glob: '*.md' }, ['a.txt:1:needle in a.txt']],
      [{ pattern: 'needle', path: 'node_modules/pkg/index.ts' }, ['node_modules/pkg/index.ts:1:needle in deps']],
      [{ pattern: '^needle\\b' }, ['.hidden/config.ts:1:needle hidden', 'a.txt:1:needle in a.txt', 'notes/crlf.txt:1:needle with crlf\r', 'src/[id]/page.tsx:1:needle page']],
      [{ pattern: 'needle$' }, ['notes/no-newline.txt:1:last needle']],
      [{ pattern: 'http://[a-z]+:\\d+' }, ['src/app.ts:2:const url = "http://needle:8080";']],
    ];

    it.each(queries)('%j finds path:line:text for each matching line, skipping .git, node_modules, binaries and symlinks', async (query, expected) => {
      expect(await run(toolsAt(root), 'grep', query)).toEqual({ output: expected.join('\n'), isError: false });
    });

    it('says when nothing matches, and what a binary file named outright is', async () => {
      const tools = toolsAt(root);
      expect(await run(tools, 'grep', { pattern: 'no such text anywhere' })).toEqual({ output: 'no matches', isError: false });
      expect(await run(tools, 'grep', { pattern: 'needle', path: 'bin/data.bin' })).toEqual({
        output: 'bin/data.bin is a binary file (a NUL byte at offset 20): it matches, but grep shows lines of text files only',
        isError: false,
      });
      expect(await run(tools, 'grep', { pattern: 'nothing like it', path: 'bin/data.bin' })).toEqual({ output: 'no matches', isError: false });
    });

    it('stops at 500 matches and says so', async () => {
      writeTree(root, { 'many.txt': 'needle\n'.repeat(600) });
      for (const path of ['many.txt', '.']) {
        const { output } = await run(toolsAt(root, { maxOutputChars: 100_000 }), 'grep', { pattern: 'needle', path, glob: 'many.*' });
        const lines = output.split('\n');
        expect(lines).toHaveLength(501);
        expect(lines[499]).toBe('many.txt:500:needle');
        expect(lines[500]).toBe('[stopped at 500 matches; narrow the pattern, path or glob]');
      }
    });

    it('makes a bad regex or glob a tool error saying what is wrong', async () => {
      const tools = toolsAt(root);
      expect(await run(tools, 'grep', { pattern: 'needle(' })).toEqual({ output: 'invalid regex: unclosed group', isError: true });
      expect((await run(tools, 'grep', { pattern: '(?<=x)a' })).output).toMatch(/^invalid regex: look-around, .* is not supported$/);
      expect(await run(tools, 'grep', { pattern: 'x', path: 'missing' })).toEqual({ output: 'no such file: missing', isError: true });
    });
  });

  it('glob and grep, with no ripgrep to run, say what to install', async () => {
    for (const [name, input] of [
      ['glob', { pattern: '*' }],
      ['grep', { pattern: 'needle' }],
    ] as const) {
      const { output, isError } = await run(toolsAt(root, { ripgrep: null }), name, input);
      expect(isError).toBe(true);
      expect(output).toMatch(new RegExp(`^${name} needs ripgrep \\(rg\\), which is not installed here: .*install ripgrep \\(apt-get install ripgrep`));
    }
  });
});
