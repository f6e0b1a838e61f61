import type { CapturedTree, CompactionSetting, DomainEvent, DomainEventOf, FileChanges, InterruptCause, PermissionMode, PermissionRule, Permissions, ProviderChoice, Refusal, SideTaskReport, ThreadParent, WorkerProcess } from '../../domain/index.ts';

export type { Refusal };

/** What `turn.start` does when a turn is already open. */
export type WhileRunning = 'queue' | 'steer' | 'interrupt';

/** How a turn a worker settles ended, when it did not complete. */
export type TurnOutcome = { kind: 'interrupted'; cause: InterruptCause; reason: string } | { kind: 'failed'; error: string };

export type { CommandResult } from '../../protocol/apiResults.ts';
import { createHash } from 'node:crypto';
import { colocatedThreadId } from '../../domain/index.ts';
import { SYSTEM_COMMAND_PREFIX } from '../../protocol/apiSchemas.ts';

/**
 * What clients may ask of a thread. Each carries a command id that stays the
 * same across retries: the engine answers a repeated id with the stored
 * answer and writes nothing new.
 */
export type ClientCommand =
  | {
      type: 'thread.create';
      commandId: string;
      threadId: string;
      title: string;
      workspace: string | null;
      /** The principal the thread belongs to; `null`: nobody in particular (any principal with the scope). */
      owner: string | null;
      /** Which workers may run its turns (default `default`). */
      environment?: string;
      /** What its agent may do without asking (default: mode `ask`, no rules). */
      permissions?: Permissions;
      /** Whether its context is compacted when it no longer fits (default `auto`). */
      compaction?: CompactionSetting;
      /** The agent its turns run as when they name none (default `build`). */
      agent?: string;
      /** A child agent's thread: the call it answers (the engine's own, for a `task.delegated`; never a client's). */
      parent?: ThreadParent;
    }
  | { type: 'thread.configure'; commandId: string; threadId: string; mode: PermissionMode | null; rules: PermissionRule[] | null; compaction?: CompactionSetting | null; agent?: string | null }
  | { type: 'thread.rename'; commandId: string; threadId: string; title: string }
  | { type: 'thread.archive'; commandId: string; threadId: string }
  | {
      type: 'turn.start';
      commandId: string;
      threadId: string;
      turnId: string;
      input: { text: string };
      provider: ProviderChoice;
      /** This run's permission mode, when not the thread's. */
      mode?: PermissionMode | null;
      /** When a turn is already open (default `queue`); see `turnQueue.ts`. */
      whileRunning?: WhileRunning;
      /** The trace the turn runs in (a W3C traceparent), recorded with it so its worker's spans join it. */
      trace?: string;
      /** The agent it runs as, instead of the thread's. */
      agent?: string;
    }
  | { type: 'turn.interrupt'; commandId: string; threadId: string; turnId: string | null; reason: string }
  | {
      type: 'approval.respond';
      commandId: string;
      threadId: string;
      approvalId: string;
      /** `always`: approve, and allow such calls in this thread from now on. */
      decision: 'approve' | 'always' | 'deny';
      by: string;
      note: string | null;
    }
  | { type: 'session.stop'; commandId: string; threadId: string; reason: string }
  /** Undo turn `turnId` and every later one still standing: recorded first, holding the thread, then done by a worker (`checkpoint.finishRevert`). */
  | { type: 'checkpoint.revert'; commandId: string; threadId: string; turnId: string; by: string };

/**
 * What the system itself submits: ingestion of provider output, deadlines,
 * and crash repair. Never accepted from clients.
 */
export type SystemCommand =
  | {
      /** Lifecycle events from a worker. Each is checked alone: an illegal one becomes a diagnostic activity. */
      type: 'turn.record';
      commandId: string;
      threadId: string;
      turnId: string;
      /** The lease the worker holds (fencing); left out by the engine's own, unleased writers. */
      lease?: LeaseProof;
      /** The worker's running number of this write under its lease: with it, the lease keeps one receipt, its last write's. */
      seq?: number;
      events: DomainEvent[];
    }
  | {
      /**
       * Ends an open turn that cannot end on its own: a confirmed interrupt
       * (from the provider, or the deadline), or a failure. Open parts,
       * approvals and the step are closed first.
       */
      type: 'turn.settle';
      commandId: string;
      threadId: string;
      turnId: string;
      /** As for `turn.record`: a worker settles only a turn it holds. */
      lease?: LeaseProof;
      outcome: Exclude<TurnOutcome, { cause: 'repair' | 'workerLost' }>;
    }
  /** A child's turn settled, or it could not be made: its parent's call gets the outcome (recorded once, while that call is open). */
  | ({ type: 'task.settle'; commandId: string; threadId: string } & Omit<DomainEventOf<'task.settled'>, 'type'>)
  | {
      /** A worker claims a turn nobody holds: it gets a lease, whose token fences everything it writes. */
      type: 'turn.lease';
      commandId: string;
      threadId: string;
      turnId: string;
      workerId: string;
      /** The hash of the key the worker was given; the key itself is never stored. */
      keyHash: string;
      /** The worker's process, as its heartbeat named it. */
      process?: WorkerProcess | null;
    }
  | {
      /**
       * The lease with this token lapsed (its worker stopped renewing): the
       * open step is closed and the turn waits for another worker, unless it
       * was being interrupted (it settles) or has been resumed `maxResumes`
       * times already (it fails).
       */
      type: 'turn.expireLease';
      commandId: string;
      threadId: string;
      turnId: string;
      token: number;
      reason: string;
      maxResumes: number;
    }
  | {
      /** Nobody answered an approval before its deadline. */
      type: 'approval.expire';
      commandId: string;
      threadId: string;
      approvalId: string;
    }
  | {
      /** The provider session is gone after a stop request. */
      type: 'session.confirmStopped';
      commandId: string;
      threadId: string;
    }
  | {
      /** A turn was open when its process died and no worker holds it: settle it honestly. */
      type: 'turn.repair';
      commandId: string;
      threadId: string;
      turnId: string;
      reason: string;
    }
  | {
      /** A worker undid what the revert's turns changed: the log records it, and the thread is free again. */
      type: 'checkpoint.finishRevert';
      commandId: string;
      threadId: string;
      revertId: string;
      changes: FileChanges;
      saved: CapturedTree;
    }
  | {
      /** The revert did not happen (a conflict, no worker, an error), or a restart cut it short: why, and the thread is free again. */
      type: 'checkpoint.abandonRevert';
      commandId: string;
      threadId: string;
      revertId: string;
      reason: string;
      conflicts: string[];
      saved: CapturedTree | null;
    }
  | {
      /** What a worker's side work for a completed turn came to: recorded as an activity, and applied while it still may be. */
      type: 'sideWork.record';
      commandId: string;
      threadId: string;
      workerId: string;
      report: SideTaskReport;
    };

/** A lease's fencing token and its key, as a worker proves it holds the turn. */
export interface LeaseProof {
  token: number;
  key: string;
}

export type Command = ClientCommand | SystemCommand;

const systemCommandTypes: ReadonlySet<Command['type']> = new Set<SystemCommand['type']>([
  'turn.record',
  'turn.settle',
  'turn.lease',
  'turn.expireLease',
  'approval.expire',
  'session.confirmStopped',
  'turn.repair',
  'sideWork.record',
  'checkpoint.finishRevert',
  'checkpoint.abandonRevert',
]);

/** What the system submits (worker output, deadlines, repair) rather than a client. */
export const isSystemCommand = (command: Command): command is SystemCommand => systemCommandTypes.has(command.type);

/**
 * Command ids the system makes for itself, under a prefix clients may not use,
 * keyed by thread (turn and approval ids are only unique within one), so no
 * client id can ever take a system command's receipt.
 */
export const systemCommandId = (...parts: Array<string | number>): string => `${SYSTEM_COMMAND_PREFIX}${parts.join(':')}`;
export type CommandType = Command['type'];


/**
 * An id made from what names it (a command id, a parent and its call), so
 * a retry names the same thread or turn (and reaches the same engine of a
 * cluster); ids a client left out are made so.
 */
export const derivedId = (kind: string, from: string) => `${kind}_${createHash('sha256').update(from).digest('hex').slice(0, 24)}`;

/**
 * The child thread of a delegated call: named after the parent thread and
 * the call, so a call taken up again finds the child it has, and in the
 * parent's shard, so one engine of a cluster holds a whole tree of threads.
 */
export const childThreadIdOf = (threadId: string, toolCallId: string): string => colocatedThreadId(derivedId('thr', `${threadId}/${toolCallId}`), threadId);

/** The turn a child thread runs for its parent's call: named after the child, so making it twice makes it once. */
export const childTurnIdOf = (childThreadId: string): string => derivedId('turn', `${childThreadId}/task`);
