import type { ApprovalView, CapturedTree, CheckpointDiff, FileChanges, Refusal, StoredEvent, ThreadSummary, ThreadView, TurnView } from '../domain/index.ts';
import type { ApiMethod } from './apiSchemas.ts';
import type { Scope } from './scopes.ts';

/** The answer to an accepted command; a rejected one is an `{ error }`. */
export interface CommandResult {
  commandId: string;
  threadId: string;
  /** Per-thread sequence range written by this command (empty when `toThreadSeq < fromThreadSeq`). */
  fromThreadSeq: number;
  toThreadSeq: number;
  /** Events the machines refused and that were recorded as diagnostics instead (turn.record). */
  diagnostics: number;
  /** Which events those were, and why: the answer per event a worker gets. */
  refused: Refusal[];
}

/** What became of a `turn.start`: the answer a client gets, read from the events the command wrote (so a retry gets the same). */
export type StartOutcome =
  | { inbox: 'started'; turnId: string }
  | { inbox: 'queued'; turnId: string; interrupted: string | null }
  | { inbox: 'steered'; turnId: string; inputId: string };

/** A worker as the engine knows it from its heartbeats (`worker.list`). */
export interface WorkerInfo {
  workerId: string;
  environment: string;
  workspace: string | null;
  host: string;
  pid: number;
  startTicks: number | null;
  capacity: number;
  /** Turns it said it runs, at its last heartbeat. */
  runningTurns: number;
  firstSeen: number;
  lastHeartbeat: number;
  /** Heard from within the lease timeout. */
  live: boolean;
}

/** How a watched thread's messages are marked on the watcher's inbox: `event` (with `turnloom-seq`) or `live`. */
export const WATCH_KIND_HEADER = 'turnloom-kind';

/** What every mutating method answers: the command's id and the events it wrote. */
export interface MutationResult extends CommandResult {
  turnId?: string;
}

/** What `checkpoint.revert` answers once the revert is done: what it changed, and where the work tree before it is kept. */
export type RevertResult = MutationResult & FileChanges & { revertId: string; saved: CapturedTree };

/** A turn that changed the work tree, as `checkpoint.list` shows it; its id is the turn's; its changes are none until the turn ends. */
export interface CheckpointSummary extends FileChanges {
  checkpointId: string;
  turnId: string;
  before: CapturedTree | null;
  after: CapturedTree | null;
  /** The seq of the revert that undid it. */
  revertedAt: number | null;
}

export interface PendingApproval extends ApprovalView {
  threadId: string;
  turnId: string;
  /** A child agent's approval, listed with its parent's: the thread that delegated to it (answer it on `threadId`, the child's). */
  parentThreadId?: string;
}

/** Past this many events behind, a fresh `thread.get` is cheaper than paging `thread.events` (the client library's rule). */
export const MAX_CATCH_UP = 1_000;

/** What a stored event's place in the log (seq, ids, time) adds around it on the wire, at most. */
export const EVENT_ENVELOPE_BYTES = 1_024;

/** An event as `thread.events` sends it: `cut` when it was larger than one answer may carry and its longest texts were cut, with a note. */
export type WireEvent = StoredEvent & { cut?: true };

export interface ApiResults {
  'thread.create': MutationResult;
  'thread.rename': MutationResult;
  'thread.configure': MutationResult;
  'thread.archive': MutationResult;
  'thread.list': { threads: ThreadSummary[]; nextCursor: string | null };
  /** `work`: for the open turn, which worker holds it, or how many live workers its environment has (0: it waits for one). */
  'thread.get': {
    thread: ThreadView;
    seq: number;
    olderTurns: number;
    olderCursor: string | null;
    work: { turnId: string; environment: string; heldBy: string | null; liveWorkers: number } | null;
  };
  'thread.turns': { turns: TurnView[]; olderCursor: string | null };
  'thread.events': { events: WireEvent[]; lastSeq: number };
  /** `created`: a new watch (after a server restart too), so events since the last renewal may have been missed. */
  'thread.watch': { watchId: string; expiresInMs: number; created: boolean };
  'thread.unwatch': { removed: boolean };
  /**
   * `started`: the turn was requested. `queued`: it waits behind the open
   * turn (`interrupted` names that turn when the policy asked it to stop).
   * `steered`: the input went into the open turn `turnId` as `inputId`.
   */
  'turn.start': MutationResult & StartOutcome;
  'turn.interrupt': MutationResult;
  'approval.respond': MutationResult;
  'approval.list': { approvals: PendingApproval[]; nextCursor: string | null };
  /** `off`: why the workspace keeps no checkpoints, when a worker said so. */
  'checkpoint.list': { checkpoints: CheckpointSummary[]; off: string | null };
  'checkpoint.diff': CheckpointDiff & { checkpointId: string };
  'checkpoint.revert': RevertResult;
  'session.stop': MutationResult;
  'worker.list': { workers: WorkerInfo[] };
  /** Who the caller's token names, and what it may do, so a client offers only what it may ask for (without a tokens file: `local`, every scope). */
  'auth.whoami': { principal: string; scopes: Scope[] };
  health: { status: 'ok'; service: string; version: string; instance: string; uptimeMs: number; loadedThreads: number; cluster?: Record<string, unknown> };
}

export type ApiResult<M extends ApiMethod> = ApiResults[M];
