import type { CommandResult } from '../engine/commands.ts';
import type { StoredEvent } from '../engine/domainEvents.ts';
import type { ApprovalView, ThreadSummary, ThreadView } from '../engine/threadView.ts';
import type { ApiMethod } from './apiSchemas.ts';

/** What every mutating method answers: the command's id and the events it wrote. */
export interface MutationResult extends CommandResult {
  turnId?: string;
}

export interface PendingApproval extends ApprovalView {
  threadId: string;
  turnId: string;
}

/** Past this many events behind, `thread.events` tells the client to take a fresh snapshot instead. */
export const MAX_CATCH_UP = 1_000;

export interface ApiResults {
  'thread.create': MutationResult;
  'thread.rename': MutationResult;
  'thread.archive': MutationResult;
  'thread.list': { threads: ThreadSummary[]; nextCursor: string | null };
  'thread.get': { thread: ThreadView; seq: number };
  'thread.events': { events: StoredEvent[]; lastSeq: number; snapshotRequired: boolean };
  'turn.start': MutationResult & { turnId: string };
  'turn.interrupt': MutationResult;
  'approval.respond': MutationResult;
  'approval.list': { approvals: PendingApproval[] };
  'checkpoint.diff': never;
  'checkpoint.revert': MutationResult;
  'session.stop': MutationResult;
  health: { status: 'ok'; service: string; version: string; instance: string; uptimeMs: number; loadedThreads: number };
}

export type ApiResult<M extends ApiMethod> = ApiResults[M];
