import { splitCommandLine } from './commandLine.ts';
import type { ToolClass, ToolKind } from './providerAdapter.ts';

/**
 * How much a thread lets its agent do without asking: `ask` (reads run,
 * edits and commands ask), `auto-edits` (reads and edits run, commands ask),
 * `full` (everything runs), `read-only` (reads run, nothing else does).
 */
export type PermissionMode = 'ask' | 'auto-edits' | 'full' | 'read-only';

export const permissionModes: readonly PermissionMode[] = ['ask', 'auto-edits', 'full', 'read-only'];

const strictness: Record<PermissionMode, number> = { 'read-only': 0, ask: 1, 'auto-edits': 2, full: 3 };

/** The stricter of two modes: what an agent or a child runs under never widens what it was given. */
export const stricterMode = (a: PermissionMode, b: PermissionMode): PermissionMode => (strictness[a] <= strictness[b] ? a : b);

export type PermissionDecision = 'allow' | 'ask' | 'deny';

/** Whether `next` lets more run unasked than `current`. */
const widerMode = (next: PermissionMode, current: PermissionMode): boolean => strictness[next] > strictness[current];

const sameRule = (a: PermissionRule, b: PermissionRule): boolean =>
  a.tool === b.tool && a.pattern === b.pattern && a.decision === b.decision && (a.match ?? 'wildcard') === (b.match ?? 'wildcard');

/**
 * What a change of permissions allows in advance that `current` did not:
 * a wider mode, a new `allow` rule, or a dropped `ask`/`deny` rule. Each is
 * an approval given before the call is seen, so only whoever may answer
 * approvals may make it; `null` when the change only keeps or narrows.
 */
export function widening(current: Permissions, next: { mode?: PermissionMode | null | undefined; rules?: readonly PermissionRule[] | null | undefined }): string | null {
  if (next.mode && widerMode(next.mode, current.mode)) return `mode "${next.mode}" is wider than the thread's "${current.mode}"`;
  if (!next.rules) return null;
  const added = next.rules.find((rule) => rule.decision === 'allow' && !current.rules.some((kept) => sameRule(kept, rule)));
  if (added) return `the rule allowing ${added.tool} "${added.pattern}" is new`;
  const dropped = current.rules.find((rule) => rule.decision !== 'allow' && !next.rules!.some((kept) => sameRule(kept, rule)));
  if (dropped) return `the rule that makes ${dropped.tool} "${dropped.pattern}" ${dropped.decision} is dropped`;
  return null;
}


/**
 * A thread's rule for some calls: `tool` is a tool name or `*`; `pattern`
 * is what the call touches (a path, a command), taken as `match` says:
 * `wildcard` (the default, and what every rule stored without `match`
 * means) lets `*` stand for any run of characters, so `npm test*` allows
 * `npm test -- --watch`; `exact` takes the pattern as it is, `*` included
 * (an `always` answer records the call's own subject this way). A command
 * rule is matched against each simple command of the line, see
 * `decidePermission`.
 */
export interface PermissionRule {
  tool: string;
  pattern: string;
  decision: PermissionDecision;
  match?: 'exact' | 'wildcard';
}

export interface Permissions {
  mode: PermissionMode;
  rules: PermissionRule[];
}

export const defaultPermissions = (): Permissions => ({ mode: 'ask', rules: [] });

const byMode: Record<PermissionMode, Record<ToolKind, PermissionDecision>> = {
  ask: { read: 'allow', edit: 'ask', command: 'ask' },
  'auto-edits': { read: 'allow', edit: 'allow', command: 'ask' },
  full: { read: 'allow', edit: 'allow', command: 'allow' },
  'read-only': { read: 'allow', edit: 'deny', command: 'deny' },
};

/** Whether `subject` is `pattern` with each `*` standing for any run of characters; linear in each, however many stars. */
export function wildcardMatches(pattern: string, subject: string): boolean {
  let p = 0;
  let s = 0;
  // Where the last star was, and where in the subject what it stands for ends so far: a mismatch later lets it take one more character.
  let star = -1;
  let taken = 0;
  while (s < subject.length) {
    if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      taken = s;
    } else if (p < pattern.length && pattern[p] === subject[s]) {
      p++;
      s++;
    } else if (star >= 0) {
      p = star + 1;
      s = ++taken;
    } else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

const matches = (rule: PermissionRule, subject: string): boolean => (rule.match === 'exact' ? rule.pattern === subject : wildcardMatches(rule.pattern, subject));

/** A call as the rules see it: the tool's name, and how the tool classified the call. */
export type PermissionCall = { tool: string } & ToolClass;

/**
 * What happens to one tool call: nothing but reads in read-only mode; else
 * the thread's rules (a matching deny wins, then ask, then allow); else its
 * mode (a turn may run under another).
 *
 * A command is read as `splitCommandLine` splits it: a deny or ask rule
 * matching the whole line or any simple command in it applies; an allow
 * rule vouches for one simple command, so the line runs on the rules only
 * when each of its commands is allowed and the split vouches for the line
 * (no substitution, redirection, subshell…), or when a rule's pattern is
 * the whole line, character for character (what a person approved with
 * `always`). A call that outlives itself (`bash` with `keepRunning`) asks in
 * every mode but `full`, whatever the allow rules say: no rule was written
 * for processes that stay behind.
 *
 * Pure: the worker asks it before every call, and so can anyone reading the log.
 */
export function decidePermission(permissions: Permissions, mode: PermissionMode, call: PermissionCall): PermissionDecision {
  // Read-only is a promise: no rule makes an edit or a command run in it.
  if (mode === 'read-only' && call.kind !== 'read') return 'deny';
  const rules = permissions.rules.filter((rule) => rule.tool === '*' || rule.tool === call.tool);
  const line = call.kind === 'command' ? splitCommandLine(call.subject) : null;
  const pieces = line ? [call.subject, ...line.commands] : [call.subject];
  const matched = (decision: PermissionDecision, subject: string) => rules.some((rule) => rule.decision === decision && matches(rule, subject));
  for (const decision of ['deny', 'ask'] as const) if (pieces.some((piece) => matched(decision, piece))) return decision;
  if (call.outlivesCall && mode !== 'full') return 'ask';
  const allowed = line
    ? rules.some((rule) => rule.decision === 'allow' && rule.pattern === call.subject) ||
      (line.unvouched === null && line.commands.length > 0 && line.commands.every((command) => matched('allow', command)))
    : matched('allow', call.subject);
  return allowed ? 'allow' : byMode[mode][call.kind];
}
