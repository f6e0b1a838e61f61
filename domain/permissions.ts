import type { ToolKind } from './providerAdapter.ts';

/**
 * How much a thread lets its agent do without asking: `ask` (reads run,
 * edits and commands ask), `auto-edits` (reads and edits run, commands ask),
 * `full` (everything runs), `read-only` (reads run, nothing else does).
 */
export type PermissionMode = 'ask' | 'auto-edits' | 'full' | 'read-only';

export const permissionModes: readonly PermissionMode[] = ['ask', 'auto-edits', 'full', 'read-only'];

export type PermissionDecision = 'allow' | 'ask' | 'deny';

/**
 * A thread's rule for some calls: `tool` is a tool name or `*`; `pattern`
 * matches what the call touches (a path, a command line), `*` standing for
 * any run of characters, so `npm test*` allows `npm test -- --watch`.
 */
export interface PermissionRule {
  tool: string;
  pattern: string;
  decision: PermissionDecision;
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

function matches(pattern: string, subject: string): boolean {
  const expression = pattern.split('*').map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${expression}$`, 's').test(subject);
}

/**
 * What happens to one tool call: nothing but reads in read-only mode; else
 * the thread's rules (a matching deny wins, then ask, then allow); else its
 * mode (a turn may run under another).
 * Pure: the worker asks it before every call, and so can anyone reading the log.
 */
export function decidePermission(permissions: Permissions, mode: PermissionMode, call: { tool: string; kind: ToolKind; subject: string }): PermissionDecision {
  // Read-only is a promise: no rule makes an edit or a command run in it.
  if (mode === 'read-only' && call.kind !== 'read') return 'deny';
  const matching = permissions.rules.filter((rule) => (rule.tool === '*' || rule.tool === call.tool) && matches(rule.pattern, call.subject));
  for (const decision of ['deny', 'ask', 'allow'] as const) if (matching.some((rule) => rule.decision === decision)) return decision;
  return byMode[mode][call.kind];
}
