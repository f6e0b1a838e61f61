import { describe, expect, it } from 'vitest';
import { type PermissionMode, type PermissionRule, decidePermission } from '../../domain/index.ts';

const bash = (command: string, extra: { outlivesCall?: boolean } = {}) => ({ tool: 'bash', kind: 'command' as const, subject: command, ...extra });
const decide = (rules: PermissionRule[], command: string, mode: PermissionMode = 'ask', extra: { outlivesCall?: boolean } = {}) =>
  decidePermission({ mode, rules }, mode, bash(command, extra));
const allow = (pattern: string, match?: 'exact' | 'wildcard'): PermissionRule => ({ tool: 'bash', pattern, decision: 'allow', ...(match ? { match } : {}) });
const deny = (pattern: string): PermissionRule => ({ tool: '*', pattern, decision: 'deny' });

describe('command rules are matched against the parsed command line', () => {
  it('an allow rule vouches for one simple command, not for what follows a separator', () => {
    const rules = [allow('git status*')];
    expect(decide(rules, 'git status')).toBe('allow');
    expect(decide(rules, 'git status --short')).toBe('allow');
    for (const line of ['git status; touch X', 'git status && touch X', 'git status || touch X', 'git status | sh', 'git status & touch X', 'git status\ntouch X', 'git status |& sh']) {
      expect(decide(rules, line), line).toBe('ask');
    }
    for (const mode of ['ask', 'auto-edits'] as const) expect(decide(rules, 'git status; touch X', mode)).toBe('ask');
  });

  it('a compound command runs without asking when every part is allowed', () => {
    const rules = [allow('git status*'), allow('git diff*')];
    expect(decide(rules, 'git status && git diff --stat')).toBe('allow');
    expect(decide(rules, 'git status; git diff | git status')).toBe('allow');
    expect(decide(rules, 'git status; git log')).toBe('ask');
  });

  it('separators inside quotes and escapes are words, not separators', () => {
    const rules = [allow('echo *')];
    expect(decide(rules, "echo 'a; touch X'")).toBe('allow');
    expect(decide(rules, 'echo "a && touch X"')).toBe('allow');
    expect(decide(rules, 'echo a\\; touch X')).toBe('allow');
  });

  it('no allow rule vouches for substitutions, redirections, subshells, groups, here-docs, comments or broken quoting', () => {
    const rules = [allow('echo *')];
    const unvouched = [
      'echo $(touch X)',
      'echo "$(touch X)"',
      'echo `touch X`',
      'echo "`touch X`"',
      'echo <(touch X)',
      'echo >(touch X)',
      'echo hi > ~/.bashrc',
      'echo hi >> notes',
      'echo hi 2> err',
      'echo hi &> all',
      'echo < /etc/passwd',
      'echo (touch X)',
      'echo { touch X; }',
      'echo ${x@P}',
      'echo <<EOF\ntouch X\nEOF',
      "echo 'unbalanced",
      'echo "unbalanced',
      'echo trailing\\',
      "echo #'\ntouch X #'",
      "echo $'\\''; touch X\n'",
      'echo $((x))',
    ];
    for (const line of unvouched) expect(decide(rules, line), line).toBe('ask');
    // A duplication between descriptors writes no file.
    expect(decide(rules, 'echo hi 2>&1')).toBe('allow');
    expect(decide(rules, 'echo hi >&2')).toBe('allow');
    // A `#` inside a word is a character, and a quoted one is text.
    expect(decide(rules, "echo a#b '#' \"#\"")).toBe('allow');
  });

  it('the mode still decides what no rule allows: full runs anything, read-only nothing', () => {
    expect(decide([], 'echo $(date) > out; ls', 'full')).toBe('allow');
    expect(decide([allow('*')], 'ls', 'read-only')).toBe('deny');
  });

  it('a deny rule matching any part, or the whole line, denies', () => {
    expect(decide([allow('ls*'), deny('rm *')], 'ls; rm -rf x')).toBe('deny');
    expect(decide([deny('rm *')], 'echo $(x) && rm -rf x', 'full')).toBe('deny');
    expect(decide([deny('*rm -rf*')], 'ls; rm -rf x', 'full')).toBe('deny');
  });

  it('an exact rule takes `*` literally; a wildcard rule (the default, and every rule stored before) expands it', () => {
    expect(decide([allow('ls *', 'exact')], 'ls *')).toBe('allow');
    expect(decide([allow('ls *', 'exact')], 'ls ; touch Y')).toBe('ask');
    expect(decide([allow('ls *', 'exact')], 'ls foo')).toBe('ask');
    expect(decide([allow('ls *')], 'ls foo')).toBe('allow');
    expect(decide([allow('ls *', 'wildcard')], 'ls foo')).toBe('allow');
    // The whole line a person approved, compound or not, runs as approved.
    expect(decide([allow('npm test && echo $(date) > ran', 'exact')], 'npm test && echo $(date) > ran')).toBe('allow');
  });

  it('a path rule recorded exactly matches that path only', () => {
    const rules: PermissionRule[] = [{ tool: 'write', pattern: 'src/*.ts', decision: 'allow', match: 'exact' }];
    expect(decidePermission({ mode: 'ask', rules }, 'ask', { tool: 'write', kind: 'edit', subject: 'src/*.ts' })).toBe('allow');
    expect(decidePermission({ mode: 'ask', rules }, 'ask', { tool: 'write', kind: 'edit', subject: 'src/a.ts' })).toBe('ask');
  });

  it('a call that outlives itself asks in every mode but full, whatever the rules allow; a deny rule still denies', () => {
    for (const mode of ['ask', 'auto-edits'] as const) expect(decide([allow('npm run dev')], 'npm run dev', mode, { outlivesCall: true })).toBe('ask');
    expect(decide([], 'npm run dev', 'full', { outlivesCall: true })).toBe('allow');
    expect(decide([deny('npm *')], 'npm run dev', 'full', { outlivesCall: true })).toBe('deny');
    expect(decide([allow('*')], 'npm run dev', 'read-only', { outlivesCall: true })).toBe('deny');
  });
});
