import type { Usage } from './usage.ts';
import type { RevertedTurn } from './checkpoints.ts';
export type { Usage, RevertedTurn };
import type { PermissionMode, PermissionRule, Permissions } from './permissions.ts';
import type { CapturedTree, CheckpointDiff, CheckpointSide, FileChanges } from './checkpoints.ts';
import type { ProviderMessage, ToolKind } from './providerAdapter.ts';
import type { SideTaskKind } from './sideWork.ts';
import type { RequestContext, RequestHeader } from './requestRecord.ts';
import type { ApprovalPreview } from './approvalPreview.ts';
import type { TaskStatus, ThreadParent } from './delegation.ts';

/** What a piece of an assistant message holds. */
export type PartKind = 'text' | 'reasoning' | 'tool';

export interface ProviderChoice {
  /** Adapter name: `scripted`, `openai-chat`, `openai-responses`, `anthropic`. */
  name: string;
  model: string | null;
}

export type ToolOutcome = 'notStarted' | 'unknown';

/**
 * What an activity reports: `hook` is a decision of a worker's extension
 * hook; `sideWork.*` the engine's record of a worker's side work (see `domain/sideWork.ts`).
 */
export type ActivityKind = 'diagnostic' | 'retry' | 'error' | 'repair' | 'info' | 'hook' | 'task' | `sideWork.${SideTaskKind}`;

/** Whether a thread's context is summarised when it no longer fits (`auto`, the default) or the turn fails (`off`). */
export type CompactionSetting = 'auto' | 'off';

/** Who confirmed that an interrupted turn stopped. */
export type InterruptCause = 'provider' | 'deadline' | 'repair' | 'workerLost' | 'engine';

/** The environment a thread runs in when it names none. */
export const DEFAULT_ENVIRONMENT = 'default';

/** Which process a worker runs in, precisely enough to tell it from a later one that reuses its pid. */
export interface WorkerProcess {
  host: string;
  pid: number;
  /** Its start time in clock ticks since boot (Linux); `null` where the system does not say. */
  startTicks: number | null;
}

/**
 * The durable log of a thread. Every fact turnloom knows is one of these; the
 * read model is a fold of them and the lifecycle actors are restored from them.
 * Events carrying `turnId` belong to that turn and only appear while it is open.
 */
export type DomainEvent =
  // thread
  | {
      type: 'thread.created';
      title: string;
      workspace: string | null;
      owner: string | null;
      /** Which workers may run its turns: those that serve this environment. */
      environment: string;
      permissions: Permissions;
      /** A child thread's parent: the tool call it answers, and its depth in the tree (absent: a thread of its own). */
      parent?: ThreadParent;
    }
  /** The thread's permission mode, its rules, whether it compacts, its agent, or some of them, replaced (`null`: unchanged). */
  | { type: 'thread.configured'; mode: PermissionMode | null; rules: PermissionRule[] | null; compaction?: CompactionSetting | null; agent?: string | null }
  /** A rule added by an answer (`always`): from now on, such calls run without asking. */
  | { type: 'permission.ruleAdded'; rule: PermissionRule; by: string; approvalId: string | null }
  | { type: 'thread.renamed'; title: string }
  | { type: 'thread.archived' }
  // session (the provider binding)
  | { type: 'session.started'; providerSessionId: string | null }
  | { type: 'session.failed'; reason: string }
  | { type: 'session.stopRequested'; reason: string }
  | { type: 'session.stopped' }
  // turn and its steps
  | {
      type: 'turn.requested';
      turnId: string;
      input: { text: string };
      provider: ProviderChoice;
      /** This run's permission mode, when it is not the thread's. */
      mode: PermissionMode | null;
      /** The trace the turn belongs to (a W3C traceparent), when it was started in one: the spans of whoever runs it join it. */
      trace?: string;
      /** The agent it runs as, when the turn named one (else the thread's, else `build`). */
      agent?: string;
    }
  /**
   * A turn accepted while another is open (`whileRunning: queue`, or
   * `interrupt`, which puts it first): it waits in the thread's queue and is
   * requested, in the order the log accepted it, once the open turn settles.
   */
  | {
      type: 'turn.queued';
      queuedTurnId: string;
      input: { text: string };
      provider: ProviderChoice;
      mode: PermissionMode | null;
      place: 'back' | 'front';
      trace?: string;
      agent?: string;
    }
  /** Input for the open turn while it runs (`whileRunning: steer`): it waits in the turn's inbox for the next step boundary. */
  | { type: 'input.steered'; turnId: string; inputId: string; text: string }
  /** The worker took inbox input into the step it is about to start: each becomes a user part the model reads in that step. */
  | { type: 'input.claimed'; turnId: string; inputIds: string[]; step: number }
  | { type: 'turn.started'; turnId: string }
  /** What the turn's prompt is built from, snapshotted by the worker that started it (see `RequestContext`). */
  | { type: 'request.context'; turnId: string; context: RequestContext }
  /** What the model calls from step `step` on are told beyond the conversation, when it first appears or changes (see `RequestHeader`). */
  | { type: 'request.header'; turnId: string; step: number; header: RequestHeader }
  /**
   * A worker's hook replaced what the model reads from step `step` on: the
   * conversation is `messages`, then this turn's answers from that step, then
   * later turns. Recorded before the step, so the request is still the log's.
   */
  | { type: 'context.replaced'; turnId: string; step: number; messages: ProviderMessage[]; by: string; reason: string }
  /** The context was about to overflow (`window`) or did (`overflow`): older turns are being summarised by a model call. */
  | { type: 'compaction.started'; turnId: string; step: number; reason: 'window' | 'overflow' }
  /**
   * The summary replaces every turn before `keptFromTurnId` (the turns from it
   * on, this one included, stay verbatim) in what the model reads from step `step` on.
   */
  | { type: 'context.compacted'; turnId: string; step: number; summary: string; keptFromTurnId: string; usage: Usage | null }
  | { type: 'compaction.failed'; turnId: string; reason: string }
  /**
   * A worker holds the turn. `token` is this event's thread sequence: every
   * record the worker sends carries it, and one from an older lease is
   * fenced. With it goes a key only the worker was told (here, its hash),
   * so a token, which anyone can guess, is not enough to write.
   */
  | {
      type: 'turn.leased';
      turnId: string;
      workerId: string;
      token: number;
      keyHash: string;
      /** The worker's process, as its heartbeat named it: an engine that restarts on its host can tell it died. Absent in older logs. */
      process?: WorkerProcess | null;
    }
  /**
   * The worker stopped renewing (or was lost). A step still streaming is
   * closed; a step whose answer is complete keeps its open tool calls (only
   * one that was running gets an unknown outcome), and the next worker runs
   * them. The turn waits for another worker.
   */
  | { type: 'turn.leaseLost'; turnId: string; workerId: string; token: number; reason: string }
  | {
      type: 'step.started';
      turnId: string;
      step: number;
      /** A digest of the messages sent to the model, which the engine re-derives from its own log and compares. */
      digest: string | null;
    }
  | { type: 'response.started'; turnId: string; step: number; responseId: string | null; model: string | null }
  | {
      type: 'response.completed';
      turnId: string;
      step: number;
      /** Normalised: `stop`, `toolCalls`, `maxTokens`, `refusal`, `contentFilter`, `other`. */
      stopReason: string;
      /** What the provider said, verbatim. */
      rawReason: string | null;
    }
  | { type: 'tools.started'; turnId: string; step: number; toolCallIds: string[] }
  | {
      type: 'step.finished';
      turnId: string;
      step: number;
      outcome: 'stop' | 'toolCalls' | 'error' | 'interrupted';
      finishReason: string | null;
      usage: Usage | null;
      error: string | null;
    }
  | { type: 'turn.completed'; turnId: string; stopReason: string }
  | { type: 'turn.failed'; turnId: string; error: string }
  | { type: 'turn.interruptRequested'; turnId: string; reason: string }
  | { type: 'turn.interrupted'; turnId: string; cause: InterruptCause; reason: string }
  /**
   * Side work's one-line summary of a turn that completed earlier. It names
   * the turn `settledTurnId`, not `turnId`: it comes after the turn closed,
   * while another turn may be open.
   */
  | { type: 'turn.summarized'; settledTurnId: string; summary: string }
  // parts
  | { type: 'part.started'; turnId: string; partId: string; step: number; kind: Exclude<PartKind, 'tool'> }
  | { type: 'part.started'; turnId: string; partId: string; step: number; kind: 'tool'; toolCallId: string; toolName: string }
  | { type: 'part.delta'; turnId: string; partId: string; text: string }
  | { type: 'part.completed'; turnId: string; partId: string; signature: string | null }
  | { type: 'tool.inputDelta'; turnId: string; partId: string; text: string }
  | { type: 'tool.inputReady'; turnId: string; partId: string; toolCallId: string; input: unknown }
  | { type: 'tool.executing'; turnId: string; partId: string; toolCallId: string }
  | { type: 'tool.result'; turnId: string; partId: string; toolCallId: string; output: string }
  | { type: 'tool.failed'; turnId: string; partId: string; toolCallId: string; error: string }
  | { type: 'part.failed'; turnId: string; partId: string; error: string }
  | {
      type: 'part.interrupted';
      turnId: string;
      partId: string;
      reason: string;
      /** Tool parts only: the synthetic result the model will see. */
      tool: { toolCallId: string; outcome: ToolOutcome; result: string } | null;
    }
  // delegation
  /**
   * A tool call handed to a child agent: the engine makes the child thread
   * (its id derived from this thread and the call, so a call resumed after a
   * crash finds the same child) and starts its turn. `mode` is the most the
   * child may do: never wider than the parent's thread.
   */
  | { type: 'task.delegated'; turnId: string; partId: string; toolCallId: string; childThreadId: string; agent: string; prompt: string; description: string | null; mode: PermissionMode }
  /** The child's turn settled (or the child could not be made): what the parent's call returns. Recorded by the engine. */
  | {
      type: 'task.settled';
      turnId: string;
      partId: string;
      childThreadId: string;
      status: TaskStatus;
      answer: string | null;
      error: string | null;
      usage: Usage | null;
    }
  // approvals
  | {
      type: 'approval.requested';
      turnId: string;
      approvalId: string;
      partId: string;
      toolCallId: string;
      toolName: string;
      input: unknown;
      /** What the call does and touches, as the permission rules see it; an `always` answer allows this. */
      kind: ToolKind;
      subject: string;
      /** What the call would change (a file's diff, a command and its folder), worked out before asking; absent in logs written before previews. */
      preview?: ApprovalPreview | null;
    }
  | { type: 'approval.granted'; turnId: string; approvalId: string; partId: string; by: string; note: string | null }
  | { type: 'approval.denied'; turnId: string; approvalId: string; partId: string; by: string; note: string | null }
  | { type: 'approval.expired'; turnId: string; approvalId: string; partId: string }
  | { type: 'approval.cancelled'; turnId: string; approvalId: string; reason: string }
  | { type: 'approval.consumed'; turnId: string; approvalId: string }
  | { type: 'approval.undelivered'; turnId: string; approvalId: string; reason: string }
  // what happened around the lifecycle: retries, rejected provider events, repairs, side work
  | {
      type: 'activity.recorded';
      turnId: string | null;
      kind: ActivityKind;
      message: string;
      data: Record<string, unknown>;
    }
  // checkpoints of the work tree, captured and restored by the worker that serves it
  /**
   * The work tree before the turn's first change, or after the turn (with
   * the turn's diff, and the files its tools wrote that git ignores, which no
   * checkpoint holds: a revert leaves them as they are).
   */
  | { type: 'checkpoint.captured'; turnId: string; side: CheckpointSide; ref: string; commit: string; diff: CheckpointDiff | null; uncaptured?: string[] }
  /** The workspace keeps no checkpoints (not a git repository); said once per thread. */
  | { type: 'checkpoint.unavailable'; reason: string }
  /**
   * A revert of `turnIds` began (the first and every later turn still
   * standing): it holds the thread (no turn begins until it ends) while a
   * worker undoes what each of `turns` changed, between its checkpoints.
   * Before changing anything the worker captures the work tree, a checkpoint
   * named after `revertId`, so nothing a revert overwrites is lost.
   */
  | { type: 'checkpoint.revertStarted'; revertId: string; turnIds: string[]; turns: RevertedTurn[]; by: string }
  /**
   * The files those turns changed are back as they were before them (files
   * nobody turn changed are untouched): the turns are undone, and the model
   * no longer sees them. `commit` is the checkpoint before `turnIds[0]`;
   * `saved`, the work tree just before the revert. Older logs hold this
   * event alone, without `revertId` (the whole tree was restored then).
   */
  | ({ type: 'checkpoint.reverted'; turnIds: string[]; commit: string; by: string; revertId?: string; saved?: CapturedTree | null } & FileChanges)
  /** The revert did not happen, or not whole: why, the files changed since the turns that stopped it, and the tree saved before it, if any. */
  | { type: 'checkpoint.revertFailed'; revertId: string; reason: string; conflicts: string[]; saved: CapturedTree | null };

export type DomainEventType = DomainEvent['type'];
export type DomainEventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;

/** A committed event: its place in the global log and in its thread. */
export interface StoredEvent {
  /** Global sequence, strictly increasing across all threads. */
  seq: number;
  threadId: string;
  /** Per-thread sequence, 1-based and contiguous: the client's catch-up cursor. */
  threadSeq: number;
  commandId: string;
  /** Commit time, epoch milliseconds. */
  at: number;
  event: DomainEvent;
}
