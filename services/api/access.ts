import type { Engine } from '../engine/engine.ts';
import { type PermissionMode, type PermissionRule, type Permissions, type ThreadSummary, type ThreadView, TurnloomError, widening } from '../../domain/index.ts';
import type { Principal } from './auth.ts';

/** Threads belong to their owner; `admin` reaches every thread; a thread that belongs to nobody is everyone's. */
export function mayUse(principal: Principal, owner: string | null): boolean {
  return owner === null || owner === principal.name || principal.scopes.has('admin');
}

/** Somebody else's thread answers exactly like one that does not exist: its id tells nothing. */
const notFound = (threadId: string) => new TurnloomError('not_found', `thread ${threadId} not found`, { threadId });

/** The thread's summary, if this principal may use the thread. */
export function requireThread(engine: Engine, principal: Principal, threadId: string): ThreadSummary {
  const summary = engine.summary(threadId);
  if (!summary || !mayUse(principal, summary.owner)) throw notFound(threadId);
  return summary;
}

/** The whole view, if this principal may read it. */
export async function readableThread(engine: Engine, principal: Principal, threadId: string): Promise<ThreadView> {
  requireThread(engine, principal, threadId);
  return engine.getThread(threadId);
}

/**
 * A mode or rules that let calls run unasked (see `widening`) approve them
 * before anybody has seen them, so they need the scope that answers
 * approvals: `operate` alone keeps what the thread already allows.
 */
export function requireApprovalInAdvance(
  principal: Principal,
  method: string,
  current: Permissions,
  next: { mode?: PermissionMode | null | undefined; rules?: readonly PermissionRule[] | null | undefined },
): void {
  const wider = widening(current, next);
  if (wider === null || principal.scopes.has('approve') || principal.scopes.has('admin')) return;
  throw new TurnloomError('forbidden', `${wider}: letting calls run unasked approves them in advance, which needs the "approve" scope ${principal.name} lacks (${method})`, {
    principal: principal.name,
    scope: 'approve',
    method,
  });
}
