import { BusError } from '../domain/index.ts';

const tokenPattern = /^[^\s.*>]+$/;

/** Throws unless `subject` is a valid publish subject (or, with `wildcards`, subscription). */
export function assertSubject(subject: string, wildcards: boolean): void {
  const tokens = subject.split('.');
  const valid = tokens.every((token, index) => {
    if (wildcards && token === '*') return true;
    if (wildcards && token === '>') return index === tokens.length - 1;
    return tokenPattern.test(token);
  });
  if (!valid) throw new BusError('invalid_subject', `invalid subject "${subject}"`, subject);
}

/** Whether a (valid) subscription subject has wildcards, or names one subject. */
export const isPattern = (subject: string): boolean => subject.includes('*') || subject.endsWith('>');

/** Does a concrete subject match a subscription pattern? */
export function subjectMatches(pattern: string, subject: string): boolean {
  // Most subscriptions name one subject: no need to split either side.
  if (!isPattern(pattern)) return pattern === subject;
  return tokensMatch(pattern.split('.'), subject.split('.'));
}

/** `subjectMatches` on subjects split at their dots already (a pattern split once, a message's subject once for all patterns). */
export function tokensMatch(want: readonly string[], have: readonly string[]): boolean {
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '>') return have.length > i;
    if (i >= have.length) return false;
    if (want[i] !== '*' && want[i] !== have[i]) return false;
  }
  return want.length === have.length;
}
