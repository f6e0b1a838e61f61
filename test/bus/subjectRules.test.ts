import { describe, expect, it } from 'vitest';
import { subjectMatches } from '../../bus/index.ts';

describe('subject matching', () => {
  it('matches a plain subject exactly, and wildcards token by token', () => {
    expect(subjectMatches('a.b.c', 'a.b.c')).toBe(true);
    expect(subjectMatches('a.b.c', 'a.b.cd')).toBe(false);
    expect(subjectMatches('a.b', 'a.b.c')).toBe(false);
    expect(subjectMatches('a.*.c', 'a.b.c')).toBe(true);
    expect(subjectMatches('a.*.c', 'a.b.d')).toBe(false);
    expect(subjectMatches('a.*', 'a.b.c')).toBe(false);
    expect(subjectMatches('a.>', 'a.b.c')).toBe(true);
    expect(subjectMatches('a.>', 'a')).toBe(false);
    expect(subjectMatches('>', 'a')).toBe(true);
  });
});
