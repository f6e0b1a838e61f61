import type { CompactionSetting, PartKind, ProviderChoice, RevertedTurn, ToolOutcome, Usage, WorkerProcess } from './domainEvents.ts';
import type { CapturedTree, FileChanges, TurnCheckpoint } from './checkpoints.ts';
import type { PermissionMode, Permissions } from './permissions.ts';
import type { ProviderMessage, ToolKind } from './providerAdapter.ts';
import type { LogCursor } from './logCursor.ts';
import type { RequestContext, RequestHeader } from './requestRecord.ts';
import type { ApprovalPreview } from './approvalPreview.ts';
import type { TaskView, ThreadParent } from './delegation.ts';

/**
 * The read model of a thread, a pure fold of its events. Lifecycle `state`
 * fields are the machines' own state names (e.g. `running.tool.executing`),
 * so a client shows exactly what the rules say.
 */
export interface ThreadView {
  id: string;
  title: string;
  /**
   * Seq of the last rename (a person's, or the title side work generated);
   * `null` while the thread keeps the title it was created with, the only
   * title side work may replace.
   */
  renamedAt: number | null;
  workspace: string | null;
  /** The principal it belongs to: only they (and admins) may read or change it. `null`: any principal with the scope. */
  owner: string | null;
  /** The workers that may run its turns: those serving this environment. */
  environment: string;
  /** What its agent may do without asking. */
  permissions: Permissions;
  /** The tool call this thread answers, when it is a child agent's (`null`: a thread of its own). */
  parent: ThreadParent | null;
  archived: boolean;
  createdAt: number;
  updatedAt: number;
  /** Per-thread sequence of the last event folded in. */
  seq: number;
  session: SessionView;
  /** Turn ids, oldest first. */
  turnIds: string[];
  turns: Record<string, TurnView>;
  /** The open turn, if any (requested, running or interrupting). */
  openTurnId: string | null;
  /** Turns accepted while another was open, first to start first. */
  queue: QueuedTurnView[];
  /** Whether the context is summarised when it no longer fits. */
  compaction: CompactionSetting;
  /** What the model reads instead of the whole history, since a compaction or a hook replaced it; `null`: the whole history. */
  context: ContextView | null;
  /** The agent its turns run as when a turn names none (`null`: `build`). Absent in threads recorded before agents. */
  agent?: string | null;
  /** What the latest model call was told beyond the conversation, as the log recorded it. Absent before requests were recorded. */
  header?: (RequestHeader & { seq: number }) | null;
  /** The snapshot the latest turn that took one was started with (only the latest: a view is rewritten with every commit). */
  turnContext?: { turnId: string; context: RequestContext } | null;
  /** Activities not tied to a turn. */
  activities: ActivityView[];
  /** Why its workspace keeps no checkpoints, once a worker found out. */
  checkpointsOff: string | null;
  /** Reverts, oldest first: which turns each undid, what it changed, and the work tree saved just before it (`null` in older logs). */
  reverts: Array<{ seq: number; at: number; by: string; turnIds: string[]; saved: CapturedTree | null } & FileChanges>;
  /** The revert under way: it holds the thread, so no turn begins before it ends. */
  revert: { revertId: string; turnIds: string[]; turns: RevertedTurn[]; by: string; startedAt: number } | null;
  usage: Usage;
  /** Where the log stands for the invariant checks (open turn, open step, its tool calls). */
  cursor: LogCursor;
}

export interface SessionView {
  state: string;
  providerSessionId: string | null;
  failure: string | null;
}

export interface TurnView {
  id: string;
  state: string;
  provider: ProviderChoice;
  /** The user's message (its input, then any input claimed from the inbox) and the assistant's answer, in that order. */
  messages: [MessageView, MessageView];
  approvals: ApprovalView[];
  /** Input steered in while it ran, in the order the log accepted it. */
  inbox: InboxItemView[];
  /** How many times its context was compacted (at most a configured few, then it fails). */
  compactions: number;
  steps: StepView[];
  activities: ActivityView[];
  usage: Usage;
  stopReason: string | null;
  error: string | null;
  interrupt: { reason: string; cause: string | null } | null;
  /** The worker that holds the turn now, and its fencing token; `null` while no worker holds it. */
  lease: { workerId: string; token: number; keyHash: string; since: number; process: WorkerProcess | null } | null;
  /** How many times a worker was given the turn: more than one means it was resumed after losing one. */
  leases: number;
  /** This run's permission mode, when it is not the thread's. */
  mode: PermissionMode | null;
  /** The agent it was asked to run as (`null`: the thread's); `request.context` records the one it ran as. */
  agent?: string | null;
  /** The trace it runs in (a W3C traceparent), when it was started in one. Absent in turns recorded before traces. */
  trace?: string | null;
  /** The work tree before its first change and after it; `null` when it changed nothing (or nothing could be captured). */
  checkpoint: TurnCheckpoint | null;
  /** Seq of the revert that undid it: the model no longer sees it. */
  revertedAt: number | null;
  /** One line on what its changes do, from side work after it completed; `null` until then, and for a turn that changed nothing. */
  summary: string | null;
  requestedAt: number;
  /** When the worker that started it took it up (its lease's time); `null` until its start is in the log. */
  startedAt: number | null;
  endedAt: number | null;
}

/**
 * The conversation from a point on: `base`, then the turn `fromTurnId` from
 * step `fromStep` on (its user input too when `fromStep` is 0), then every
 * later turn.
 */
export interface ContextView {
  base: ProviderMessage[];
  fromTurnId: string;
  fromStep: number;
  /** `compaction`, or the hook that replaced it. */
  by: string;
  /** The compaction's summary, when it was one. */
  summary: string | null;
  /** Where it was replaced: before this step of this turn. */
  setBefore: { turnId: string; step: number };
}

/**
 * A turn waiting in the thread's queue. Its input is not here: the thread's
 * row is written with every commit, so it holds only this much of each, and
 * the whole text is read from the `turn.queued` at `seq` once, when the turn
 * is requested (a client reads it there too, with `thread.events`).
 */
export interface QueuedTurnView {
  turnId: string;
  /** Thread seq of the `turn.queued` that holds its whole input. */
  seq: number;
  /** The input's first `QUEUE_PREVIEW_CHARS` characters. */
  preview: string;
  /** The whole input's size in UTF-8: what the queue's byte limit counts. */
  bytes: number;
  provider: ProviderChoice;
  mode: PermissionMode | null;
  queuedAt: number;
}

export const QUEUE_PREVIEW_CHARS = 120;

/** The queue entry of a turn queued at `seq`: what the projector folds, and what heads written before entries were small are converted to. */
export function queuedTurnView(queued: { turnId: string; input: { text: string }; provider: ProviderChoice; mode: PermissionMode | null }, seq: number, queuedAt: number): QueuedTurnView {
  const { text } = queued.input;
  // Never half of a surrogate pair: the preview is stored and sent like any text.
  const last = text.charCodeAt(QUEUE_PREVIEW_CHARS - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? QUEUE_PREVIEW_CHARS - 1 : QUEUE_PREVIEW_CHARS;
  return { turnId: queued.turnId, seq, preview: text.slice(0, end), bytes: Buffer.byteLength(text), provider: queued.provider, mode: queued.mode, queuedAt };
}

/** Input steered into a running turn: waiting for the next step boundary, or claimed into a step. */
export interface InboxItemView {
  id: string;
  text: string;
  at: number;
  /** The step whose request first carried it; `null` while it waits. */
  claimedInStep: number | null;
}

export interface MessageView {
  id: string;
  role: 'user' | 'assistant';
  parts: PartView[];
}

export interface PartView {
  id: string;
  kind: PartKind;
  state: string;
  step: number;
  text: string;
  /** Reasoning signature (Anthropic thinking), kept so the next request can send it back. */
  signature: string | null;
  tool: ToolCallView | null;
  /** A tool call handed to a child agent: its child and how it went. */
  task: TaskView | null;
  error: string | null;
}

export interface ToolCallView {
  callId: string;
  name: string;
  /** The input as streamed (JSON text), then parsed once ready. */
  inputText: string;
  input: unknown;
  output: string | null;
  /** Set when crash repair or an interrupt wrote the result: was it ever started? */
  outcome: ToolOutcome | null;
}

export interface ApprovalView {
  id: string;
  state: string;
  requestedAt: number;
  partId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
  kind: ToolKind;
  subject: string;
  /** What the call would change, as the worker saw it when it asked (`null`: no preview). */
  preview: ApprovalPreview | null;
  decidedBy: string | null;
  note: string | null;
  reason: string | null;
}

export interface StepView {
  step: number;
  /** The provider's id of its answer, and the model that gave it. */
  responseId: string | null;
  model: string | null;
  /** Normalised stop reason of the answer (`stop`, `toolCalls`, `maxTokens`, `refusal`…). */
  stopReason: string | null;
  outcome: string | null;
  finishReason: string | null;
  usage: Usage | null;
  error: string | null;
}

export interface ActivityView {
  seq: number;
  at: number;
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

/** Steered input no step has carried yet. */
export const waitingInput = (turn: Pick<TurnView, 'inbox'>): InboxItemView[] => turn.inbox.filter((item) => item.claimedInStep === null);

/** A part still taking events: announced or running, not yet completed, failed or interrupted. */
export const isOpenPart = (part: Pick<PartView, 'state'>): boolean => part.state === 'pending' || part.state.startsWith('running');

export interface ThreadSummary {
  id: string;
  title: string;
  owner: string | null;
  environment: string;
  archived: boolean;
  createdAt: number;
  updatedAt: number;
  seq: number;
  sessionState: string;
  openTurnId: string | null;
  queuedTurns: number;
  turnCount: number;
  /** A sub-agent's thread: the thread that delegated to it (summaries stored before sub-agents lack it: none). */
  parentThreadId?: string | null;
}

export function summarize(view: ThreadView): ThreadSummary {
  return {
    id: view.id,
    title: view.title,
    owner: view.owner,
    environment: view.environment,
    archived: view.archived,
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
    seq: view.seq,
    sessionState: view.session.state,
    openTurnId: view.openTurnId,
    queuedTurns: view.queue.length,
    turnCount: view.turnIds.length,
    parentThreadId: view.parent?.threadId ?? null,
  };
}
