import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

/** Names that test a glob's syntax: folders of one and many levels, commas, braces, brackets, backslashes, spaces, `#`, `!`, non-ASCII, a newline. */
const names = [
  'a.txt',
  'dir/a.txt',
  '.env',
  'x.ts',
  'xy.ts',
  'a/b/c/x.ts',
  'a/b/c/x.tsx',
  'src/app.ts',
  'src/a/b/app.ts',
  'srcx/app.ts',
  'ab',
  'a,b',
  'a}',
  '{a,b',
  'b.ts',
  'c.ts',
  'a\\b',
  'a+b(c)|d$^',
  '#note',
  '!bang',
  'two words.md',
  'trailing ',
  'naïve-notes.md',
  'line\nbreak',
  'src/[id]/page.tsx',
  'src/i/page.tsx',
  'q/x/y/a',
  'xq/a',
  'xb',
];

describe('glob syntax: `**`, `*`, `?` and `{a,b}`, everything else literal, matched against whole paths (by ripgrep)', () => {
  const folders = new TempFolders();
  let root: string;
  beforeAll(() => {
    root = folders.make('turnloom-globs-');
    writeTree(root, Object.fromEntries(names.map((name) => [name, ''])));
  });
  afterAll(() => folders.removeAll());

  const cases: Array<[string, string[]]> = [
    ['*.txt', ['a.txt']],
    ['*', ['!bang', '#note', '.env', 'a+b(c)|d$^', 'a,b', 'a.txt', 'a\\b', 'a}', 'ab', 'b.ts', 'c.ts', 'line\nbreak', 'naïve-notes.md', 'trailing ', 'two words.md', 'x.ts', 'xb', 'xy.ts', '{a,b']],
    ['.*', ['.env']],
    ['**/*.ts', ['a/b/c/x.ts', 'b.ts', 'c.ts', 'src/a/b/app.ts', 'src/app.ts', 'srcx/app.ts', 'x.ts', 'xy.ts']],
    ['src/**/app.ts', ['src/a/b/app.ts', 'src/app.ts']],
    ['src/**', ['src/[id]/page.tsx', 'src/a/b/app.ts', 'src/app.ts', 'src/i/page.tsx']],
    ['src', []],
    ['a/**/c/*', ['a/b/c/x.ts', 'a/b/c/x.tsx']],
    ['?.ts', ['b.ts', 'c.ts', 'x.ts']],
    ['a?b', ['a,b', 'a\\b']],
    ['{a,b}.t*', ['a.txt', 'b.ts']],
    ['{a,{b,c}}.ts', ['b.ts', 'c.ts']],
    ['src/**/*.{ts,tsx}', ['src/[id]/page.tsx', 'src/a/b/app.ts', 'src/app.ts', 'src/i/page.tsx']],
    ['x{**/a,b}', ['xb', 'xq/a']],
    ['{a,b', ['{a,b']],
    ['a}', ['a}']],
    ['a,b', ['a,b']],
    ['src/[id]/*', ['src/[id]/page.tsx']],
    ['a\\b', ['a\\b']],
    ['a+b(c)|d$^', ['a+b(c)|d$^']],
    ['#note', ['#note']],
    ['!bang', ['!bang']],
    ['two words.md', ['two words.md']],
    ['trailing ', ['trailing ']],
    ['./a.txt', ['a.txt']],
    ['/a.txt', ['a.txt']],
    ['*a*a*b', []],
    ['naïve-*.md', ['naïve-notes.md']],
    ['line*', ['line\nbreak']],
  ];

  it.each(cases)('%j lists %j', async (pattern, expected) => {
    const { output, isError } = await run(toolsAt(root), 'glob', { pattern });
    expect(isError).toBe(false);
    expect(output === `no files match ${pattern}` ? [] : output.split(/\n(?!break)/)).toEqual([...expected].sort(byPath));
  });
});

/** ripgrep's walk order: each folder's entries by name, compared as bytes. */
function byPath(a: string, b: string): number {
  const [left, right] = [a.split('/'), b.split('/')];
  for (let at = 0; at < Math.min(left.length, right.length); at += 1) {
    const order = Buffer.compare(Buffer.from(left[at]!), Buffer.from(right[at]!));
    if (order !== 0) return order;
  }
  return left.length - right.length;
}
