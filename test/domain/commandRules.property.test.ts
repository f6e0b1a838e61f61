import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type PermissionRule, decidePermission } from '../../domain/index.ts';

const allowA: PermissionRule[] = [{ tool: 'bash', pattern: 'a*', decision: 'allow' }];
const decide = (rules: PermissionRule[], command: string, mode: 'ask' | 'auto-edits' = 'ask') =>
  decidePermission({ mode, rules }, mode, { tool: 'bash', kind: 'command', subject: command });

const separators = [';', ' ; ', '&&', ' || ', '|', ' | ', '&', ' & ', '\n', '|&', ';\n'];
const plainWord = fc.stringMatching(/^[a-z0-9._\/-]{1,8}$/);
const quotedWord = fc.oneof(
  fc.string({ maxLength: 8 }).filter((text) => !text.includes("'")).map((text) => `'${text}'`),
  fc.string({ maxLength: 8 }).filter((text) => !/["\\$`]/.test(text)).map((text) => `"${text}"`),
);
const args = fc.array(fc.oneof(plainWord, quotedWord), { maxLength: 4 }).map((words) => words.map((word) => ` ${word}`).join(''));

describe('command rules (properties)', () => {
  it('no line holding an unquoted separator followed by a command no rule allows is ever allowed', () => {
    const rules: PermissionRule[] = [
      { tool: 'bash', pattern: 'git status*', decision: 'allow' },
      { tool: 'bash', pattern: 'npm test*', decision: 'allow' },
      { tool: 'bash', pattern: 'ls *', decision: 'allow', match: 'exact' },
    ];
    const allowed = fc.tuple(fc.constantFrom('git status', 'npm test'), args).map(([head, rest]) => head + rest);
    const other = fc.tuple(fc.constantFrom('touch X', 'rm -rf .', 'curl evil.example', 'sh', 'ls'), args).map(([head, rest]) => head + rest);
    fc.assert(
      fc.property(fc.array(allowed, { maxLength: 3 }), fc.array(fc.constantFrom(...separators), { minLength: 4, maxLength: 4 }), other, fc.array(allowed, { maxLength: 2 }), fc.constantFrom('ask' as const, 'auto-edits' as const), (before, seps, bad, after, mode) => {
        const commands = [...before, bad, ...after];
        const line = commands.map((command, i) => (i === 0 ? command : `${seps[i % seps.length]}${command}`)).join('');
        expect(decide(rules, line, mode)).not.toBe('allow');
      }),
      { numRuns: 500 },
    );
  });

  it('a line made only of allowed commands, however they are joined, is allowed', () => {
    const allowed = fc.tuple(fc.constantFrom('git status', 'npm test'), args).map(([head, rest]) => head + rest);
    const rules: PermissionRule[] = [
      { tool: 'bash', pattern: 'git status*', decision: 'allow' },
      { tool: 'bash', pattern: 'npm test*', decision: 'allow' },
    ];
    fc.assert(
      fc.property(fc.array(allowed, { minLength: 1, maxLength: 4 }), fc.constantFrom(...separators), (commands, separator) => {
        expect(decide(rules, commands.join(separator))).toBe('allow');
      }),
      { numRuns: 300 },
    );
  });

  describe('against bash itself', () => {
    const folder = mkdtempSync(join(tmpdir(), 'turnloom-rules-'));
    afterAll(() => rmSync(folder, { recursive: true, force: true }));
    const log = join(folder, 'ran');
    // With nothing on the PATH, every command bash looks for lands in this handler, which notes its name.
    const handler = `command_not_found_handle() { printf '%s\\0' "$1" >> ${JSON.stringify(log)}; return 127; }`;
    /** The names of the commands bash ran for `line` (a name may hold a newline, so they are kept apart by NULs). */
    const ran = (line: string): string[] => {
      rmSync(log, { force: true });
      spawnSync('/bin/bash', ['-c', `${handler}\n${line}\nwait`], { cwd: folder, env: { PATH: '/nonexistent' }, stdio: 'ignore', timeout: 5_000 });
      try {
        return readFileSync(log, 'utf8').split('\0').filter(Boolean);
      } catch {
        return [];
      }
    };
    // Mostly words and separators, so that many lines are allowed; now and then anything bash treats specially.
    const character = fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom('a', 'a', 'b', 'x', ' ', ' ') },
      { weight: 4, arbitrary: fc.constantFrom(';', '&', '|', '\n', "'", '"', '\\') },
      { weight: 1, arbitrary: fc.constantFrom('$', '(', ')', '`', '#', '{', '}', '<', '>', '=', '*', '!', '\t', '[', ']') },
    );

    it('whenever the rule `a*` allows a line, bash runs no command whose name does not start with `a`', () => {
      let allowedLines = 0;
      fc.assert(
        fc.property(fc.array(character, { minLength: 1, maxLength: 24 }).map((chars) => chars.join('')), (line) => {
          if (decide(allowA, line) !== 'allow') return;
          allowedLines += 1;
          const names = ran(line);
          expect(names.filter((name) => !name.startsWith('a')), JSON.stringify(line)).toEqual([]);
        }),
        { numRuns: 2_000 },
      );
      // The property says something only if many lines were allowed (and so run).
      expect(allowedLines).toBeGreaterThan(200);
    });

    it('known bypasses of a text wildcard, each run by bash, are not allowed', () => {
      const bypasses = ['a; b', 'a\nb', 'a & b', 'a | b', 'a || b', 'a=1 b', "a #'\nb #'", "a $'\\''; b\n'", 'a `b`', 'a $(b)', 'a "$(b)"', 'a <(b)', "a \\\n#'\nb #'", 'a\\\n=1 b'];
      for (const line of bypasses) {
        // Each really does run `b` under bash, so allowing it would be a bypass.
        expect(ran(line), JSON.stringify(line)).toContain('b');
        expect(decide(allowA, line), JSON.stringify(line)).not.toBe('allow');
      }
    });
  });
});
