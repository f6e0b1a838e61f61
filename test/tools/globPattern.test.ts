import { describe, expect, it } from 'vitest';
import { globMatcher } from '../../adapters/tools/globPattern.ts';

const matches = (glob: string, path: string): boolean => globMatcher(glob)(path);

describe('glob patterns', () => {
  const cases: Array<[string, string, boolean]> = [
    ['*.txt', 'a.txt', true],
    ['*.txt', 'dir/a.txt', false],
    ['*', '.env', true],
    ['.*', '.env', true],
    ['**/*.ts', 'x.ts', true],
    ['**/*.ts', 'a/b/c/x.ts', true],
    ['**/*.ts', 'a/b/c/x.tsx', false],
    ['src/**/app.ts', 'src/app.ts', true],
    ['src/**/app.ts', 'src/a/b/app.ts', true],
    ['src/**/app.ts', 'srcx/app.ts', false],
    ['src/**', 'src/a/b', true],
    ['src/**', 'src', false],
    ['a**b', 'a/x/b', true],
    ['a**b', 'ab', true],
    ['a/**/b/**/c', 'a/b/c', true],
    ['a/**/b/**/c', 'a/x/b/y/z/c', true],
    ['a/**/b/**/c', 'a/x/c', false],
    ['?.ts', 'x.ts', true],
    ['?.ts', 'xy.ts', false],
    ['?.ts', '/.ts', false],
    ['a?b', 'a/b', false],
    ['{a,b}.ts', 'b.ts', true],
    ['{a,b}.ts', 'c.ts', false],
    ['{a,{b,c}}.ts', 'c.ts', true],
    ['src/**/*.{ts,tsx}', 'src/x/y.tsx', true],
    ['{**/a,b}', 'x/y/a', true],
    ['x{**/a,b}', 'xq/a', true],
    ['x{**/a,b}', 'xb', true],
    ['{a,b', '{a,b', true],
    ['a}', 'a}', true],
    ['a,b', 'a,b', true],
    ['{}', '', true],
    ['src/[id]/*', 'src/[id]/page.tsx', true],
    ['[ab].ts', 'a.ts', false],
    ['./a.txt', 'a.txt', true],
    ['/a.txt', 'a.txt', true],
    ['a.b', 'axb', false],
    ['a+b(c)|d$^', 'a+b(c)|d$^', true],
    ['a\\b', 'a\\b', true],
    ['*a*a*b', 'xaxxab', true],
    ['*a*a*b', 'aab/b', false],
    ['naïve-*.md', 'naïve-notes.md', true],
    // Where the RegExp translation differed: `?` is one code point (as ripgrep counts), and `**` spans a newline in a name as `*` always did.
    ['?.txt', '😀.txt', true],
    ['**', 'a\nb/c', true],
    ['*', 'line\nbreak', true],
  ];

  it.each(cases)('%s on %s is %s', (glob, path, expected) => {
    expect(matches(glob, path)).toBe(expected);
  });
});
