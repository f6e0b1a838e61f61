import type { ZodError } from 'zod';
import { secretKeyPattern } from './secretLiterals.ts';

type Issue = ZodError['issues'][number];

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);
const typeNames: Record<string, string> = { int: 'whole number', record: 'object', object: 'object', array: 'list' };

/**
 * A schema issue as a person reads it: the key path and what is allowed
 * there (`agents.plan.mode: must be one of ask, auto-edits, full,
 * read-only`), never the value found, which may be a secret.
 */
function describeIssue(issue: Issue): string {
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0]!;
      if (secretKeyPattern.test(key)) {
        return `"${key}" would hold a secret: put it in an environment variable and name the variable${issue.path.at(-2) === 'providers' ? ' in "apiKeyEnv"' : ''}`;
      }
      return issue.keys.length === 1 ? `unknown key "${key}"` : `unknown keys ${issue.keys.map((name) => `"${name}"`).join(', ')}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_type':
      // Zod leaves the value out of its issues, but its message says when there was none.
      return issue.message.endsWith('received undefined') ? 'is required' : `must be ${article(typeNames[issue.expected] ?? issue.expected)}`;
    case 'too_small':
    case 'too_big': {
      const bound = issue.code === 'too_small' ? 'at least' : 'at most';
      const limit = issue.code === 'too_small' ? issue.minimum : issue.maximum;
      if (issue.origin === 'string') return `must be ${bound} ${limit} characters long`;
      if (issue.origin === 'array') return `must have ${bound} ${limit} entries`;
      return `must be ${bound} ${limit}`;
    }
    case 'invalid_format':
      // The schema's own messages say what is allowed; zod's generic one echoes the pattern.
      return issue.message.startsWith('Invalid') ? `must be ${article(issue.format)}` : issue.message;
    default:
      return issue.message;
  }
}

/** The issue a person should fix first, with its full path: record keys and union branches report theirs one level down. */
function firstIssue(issues: readonly Issue[], prefix: PropertyKey[] = []): { path: PropertyKey[]; issue: Issue } | null {
  const issue = issues[0];
  if (!issue) return null;
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_key' && issue.issues.length > 0) return firstIssue(issue.issues as Issue[], path) ?? { path, issue };
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    // The branch the value was meant for is the one it comes closest to.
    const closest = [...issue.errors].sort((a, b) => a.length - b.length)[0]!;
    return firstIssue(closest as Issue[], path) ?? { path, issue };
  }
  return { path, issue };
}

/** The first issue of a config file's schema error as one line: `key.path: what is allowed`. */
export function configIssueLine(error: ZodError): string {
  const found = firstIssue(error.issues);
  if (!found) return 'invalid';
  const where = found.path.map(String).join('.');
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${where ? `${where}: ` : ''}${describeIssue(found.issue)}${more}`;
}
