import { symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findRipgrep } from '../../adapters/tools/ripgrep.ts';
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
    const queries: Array<Record<string, unknown>> = [
      { pattern: 'needle' },
      { pattern: 'needle', ignoreCase: true },
      { pattern: 'needle', glob: '*.ts' },
      { pattern: 'needle', glob: 'src/**/*.tsx' },
      { pattern: 'needle', glob: '*.{md,txt}' },
      { pattern: 'needle', path: 'src' },
      { pattern: 'needle', path: 'link-to-src' },
      { pattern: 'needle', path: 'a.txt' },
      { pattern: 'needle', path: 'a.txt', glob: '*.md' },
      { pattern: 'needle', path: 'bin/data.bin' },
      { pattern: '^needle\\b' },
      { pattern: 'needle$' },
      { pattern: 'http://[a-z]+:\\d+' },
      { pattern: 'no such text anywhere' },
    ];

    it('finds matching lines as path:line:text, skipping .git, node_modules, binaries and symlinks (JS fallback)', async () => {
      const { output, isError } = await run(toolsAt(root, { ripgrep: null }), 'grep', { pattern: 'needle' });
      expect(isError).toBe(false);
      expect(output).toBe(
        [
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
        ].join('\n'),
      );
      expect((await run(toolsAt(root, { ripgrep: null }), 'grep', { pattern: 'needle', path: 'link-to-src', glob: '*.css' })).output).toBe('link-to-src/deep/er/style.css:1:.needle { color: red }');
    });

    it('gives the same output with ripgrep as with the JS fallback', async (context) => {
      const rg = findRipgrep(process.env.PATH);
      if (rg === null) {
        if (process.env.TURNLOOM_ALLOW_NO_RIPGREP === '1') return context.skip('rg is not on the PATH and TURNLOOM_ALLOW_NO_RIPGREP=1: the ripgrep grep is not tested');
        throw new Error('rg (ripgrep) is not on the PATH: apt-get install ripgrep (or set TURNLOOM_ALLOW_NO_RIPGREP=1 to run without it)');
      }
      const withRipgrep = toolsAt(root, { ripgrep: rg });
      const fallback = toolsAt(root, { ripgrep: null });
      for (const query of queries) {
        const expected = await run(fallback, 'grep', query);
        expect(expected.isError, JSON.stringify(query)).toBe(false);
        expect(await run(withRipgrep, 'grep', query), JSON.stringify(query)).toEqual(expected);
      }
      expect((await run(withRipgrep, 'grep', { pattern: 'needle' })).output.split('\n')).toHaveLength(11);
      expect((await run(withRipgrep, 'grep', { pattern: 'no such text' })).output).toBe('no matches');
    });

    it('stops at 500 matches and says so, the same way with ripgrep and without', async () => {
      writeTree(root, { 'many.txt': 'needle\n'.repeat(600) });
      const rg = findRipgrep(process.env.PATH);
      for (const ripgrep of rg === null ? [null] : [null, rg]) {
        const { output } = await run(toolsAt(root, { ripgrep, maxOutputChars: 100_000 }), 'grep', { pattern: 'needle', path: 'many.txt' });
        const lines = output.split('\n');
        expect(lines).toHaveLength(501);
        expect(lines[499]).toBe('many.txt:500:needle');
        expect(lines[500]).toBe('[stopped at 500 matches; narrow the pattern, path or glob]');
      }
    });

    it('makes a bad regex a tool error, with ripgrep and without', async () => {
      const rg = findRipgrep(process.env.PATH);
      for (const ripgrep of rg === null ? [null] : [null, rg]) {
        const { output, isError } = await run(toolsAt(root, { ripgrep }), 'grep', { pattern: 'needle(' });
        expect(isError).toBe(true);
        expect(output).toMatch(/regex/i);
      }
      expect(await run(toolsAt(root, { ripgrep: null }), 'grep', { pattern: 'x', path: 'missing' })).toEqual({ output: 'no such file: missing', isError: true });
    });
  });
});
