import type { ApprovalView, PartView, StepView, TaskStatus, TurnView, Usage } from '../domain/index.ts';
import type { LiveDelta } from '../protocol/liveBatch.ts';

/** A turn as it ended. */
export interface SettledTurn {
  threadId: string;
  turnId: string;
  state: 'completed' | 'failed' | 'interrupted';
  /** The answer's text: its text parts (one per step that said something), a blank line between two. */
  text: string;
  /** Why it failed or was interrupted (the provider's words, a tool's, the interrupt's reason); `null` when it completed. */
  error: string | null;
  usage: Usage;
  /** The whole turn, as the thread's view has it. */
  turn: TurnView;
}

/** How a tool call ended: with its result, refused or failed (`error`), or stopped before it could finish. */
export type ToolEndState = 'completed' | 'error' | 'interrupted';

/** What became of an approval once it left `pending`. */
export type ApprovalDecisionMade = 'approved' | 'denied' | 'expired' | 'cancelled';

/**
 * What happens in a turn, one fact at a time, in the order it happened:
 * what `turn.events()` yields. A program `switch`es on `type`; the union is
 * closed, so a `never` check in its `default` tells at compile time when a
 * kind is missed. Every event names its turn; those of a step name it too.
 *
 * - `turn.started`: a worker took the turn up (a turn queued behind another waits before this).
 * - `step.started` / `step.finished`: one model call, from its request to its end (`outcome`:
 *   `stop`, `toolCalls`, `error`, `interrupted`), with the tokens it used.
 * - `text.delta` / `reasoning.delta`: what was added to a part's text: typed from the live channel,
 *   and whatever it lost filled in from the log, so a part's deltas always add up to its text.
 * - `tool.started`: a tool call began to run (after its approval, when it needed one).
 *   `tool.output`: the latest output of the running call (a tail that replaces the one before; may be lost).
 *   `tool.finished`: every call ends with one, with what the model reads of it, a call that never
 *   ran (refused, failed on its input, interrupted) too.
 * - `approval.asked` / `approval.answered`: a call waits for a person, then was decided (or expired, or was withdrawn).
 * - `subagent.started` / `subagent.settled`: a `task` call handed to a child agent in a thread of its own, and how it ended.
 * - `usage`: the turn's tokens so far, each time they grow.
 * - `activity`: something around the lifecycle worth telling (a retry, a repair, an error, a hook's decision).
 * - `turn.settled`: the last event: the turn as it ended.
 */
export type TurnEvent =
  | { type: 'turn.started'; turnId: string }
  | { type: 'step.started'; turnId: string; step: number }
  | { type: 'text.delta'; turnId: string; step: number; partId: string; text: string }
  | { type: 'reasoning.delta'; turnId: string; step: number; partId: string; text: string }
  | { type: 'tool.started'; turnId: string; step: number; partId: string; callId: string; name: string; input: unknown }
  | { type: 'tool.output'; turnId: string; step: number; partId: string; callId: string; output: string }
  | {
      type: 'tool.finished';
      turnId: string;
      step: number;
      partId: string;
      callId: string;
      name: string;
      input: unknown;
      state: ToolEndState;
      /** What the model reads of the call: its output, or why it failed, was refused or stopped. */
      result: string | null;
      error: string | null;
    }
  | { type: 'approval.asked'; turnId: string; approval: ApprovalView }
  | { type: 'approval.answered'; turnId: string; approvalId: string; partId: string; callId: string; decision: ApprovalDecisionMade; by: string | null; note: string | null }
  | { type: 'subagent.started'; turnId: string; step: number; partId: string; callId: string; childThreadId: string; agent: string; prompt: string; description: string | null }
  | {
      type: 'subagent.settled';
      turnId: string;
      step: number;
      partId: string;
      callId: string;
      childThreadId: string;
      status: TaskStatus;
      answer: string | null;
      error: string | null;
      usage: Usage | null;
    }
  | { type: 'step.finished'; turnId: string; step: number; outcome: string; stopReason: string | null; error: string | null; usage: Usage | null }
  | { type: 'usage'; turnId: string; usage: Usage }
  | { type: 'activity'; turnId: string; kind: string; message: string; data: Record<string, unknown> }
  | { type: 'turn.settled'; turnId: string; turn: SettledTurn };

export type TurnEventType = TurnEvent['type'];
export type TurnEventOf<T extends TurnEventType> = Extract<TurnEvent, { type: T }>;

const settledStates: ReadonlySet<string> = new Set(['completed', 'failed', 'interrupted']);
const endedParts: ReadonlySet<string> = new Set(['completed', 'error', 'interrupted']);

/** Whether a turn has settled (completed, failed or interrupted). */
export const isSettled = (turn: Pick<TurnView, 'state'>): boolean => settledStates.has(turn.state);

/** Between two text parts of an answer (two steps' words), as `text()` and `SettledTurn.text` give them. */
export const TEXT_PART_SEPARATOR = '\n\n';

/** The answer's text as a whole: its text parts, a blank line between two. */
export const answerText = (turn: TurnView): string =>
  turn.messages[1].parts
    .filter((part) => part.kind === 'text' && part.text !== '')
    .map((part) => part.text)
    .join(TEXT_PART_SEPARATOR);

export function settledTurn(threadId: string, turn: TurnView): SettledTurn {
  const state = turn.state as SettledTurn['state'];
  return { threadId, turnId: turn.id, state, text: answerText(turn), error: state === 'completed' ? null : (turn.error ?? turn.interrupt?.reason ?? null), usage: turn.usage, turn };
}

/** What an approval that left `pending` was decided as; `consumed` and `undelivered` follow a decision, which the call's part tells. */
function decisionOf(approval: ApprovalView, part: PartView | undefined): ApprovalDecisionMade {
  switch (approval.state) {
    case 'approved':
    case 'denied':
    case 'expired':
    case 'cancelled':
      return approval.state;
    default:
      return part?.state === 'error' && part.error?.startsWith('denied') ? 'denied' : 'approved';
  }
}

/**
 * `text.startsWith(prefix)`, in time linear in the prefix: V8's `startsWith`
 * walks a concatenated string (a part's text grows a delta at a time) piece
 * by piece, ~10 µs a delta on a 2,000-character part, where `slice` flattens
 * it once.
 */
const extendsText = (text: string, prefix: string) => text.length >= prefix.length && text.slice(0, prefix.length) === prefix;

const sameUsage = (a: Usage, b: Usage) => a.input === b.input && a.output === b.output && a.reasoning === b.reasoning && a.cacheRead === b.cacheRead && a.cacheWrite === b.cacheWrite;

/**
 * Folds successive views of one turn, and the live deltas between them, into
 * the turn's events: each fact once, in order. Views are what a
 * `ThreadWatch` holds, so a snapshot that skipped events (a reconnect past a
 * gap) still gives every fact, only later. Pure bookkeeping: no I/O.
 */
export class TurnEventFeed {
  /** Each text or reasoning part's text as given so far: the log's and the live channel's agree on every prefix. */
  private readonly given = new Map<string, string>();
  /** Each part's text as the live channel brought it. */
  private readonly typed = new Map<string, string>();
  private readonly toolsStarted = new Set<string>();
  private readonly toolsFinished = new Set<string>();
  private readonly tasksStarted = new Set<string>();
  private readonly tasksSettled = new Set<string>();
  private readonly asked = new Set<string>();
  private readonly answered = new Set<string>();
  /** Steps by number: a step is started and finished once. */
  private readonly stepsStarted = new Set<number>();
  private readonly stepsFinished = new Set<number>();
  private activities = 0;
  private usage: Usage = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0 };
  private started = false;
  private done = false;
  /** The view folded last: where a live delta finds its part's call. */
  private last: TurnView | null = null;

  constructor(
    readonly threadId: string,
    readonly turnId: string,
  ) {}

  /** A delta of the live channel: text and reasoning at once, a running call's latest output. */
  live(delta: LiveDelta): TurnEvent[] {
    if (delta.turnId !== this.turnId || this.done) return [];
    if (delta.kind === 'text' || delta.kind === 'reasoning') {
      const typed = (this.typed.get(delta.partId) ?? '') + delta.text;
      this.typed.set(delta.partId, typed);
      // The live channel outruns the log (a step is written with its first second of answer): the step after the last
      // one finished is started by its first delta, so a turn's first words stream; any other is typed once the log started it (`next`).
      const out = this.stepsStarted.has(delta.step) ? [] : this.openedLive(delta.step);
      return this.stepsStarted.has(delta.step) ? [...out, ...this.grown(delta.partId, delta.kind, delta.step, typed)] : out;
    }
    if (delta.kind !== 'toolOutput') return [];
    const part = this.last?.messages[1].parts.find((candidate) => candidate.id === delta.partId);
    // Output of a call not known to be running yet (or already over) is only a preview: the result comes with `tool.finished`.
    if (!part?.tool || !this.toolsStarted.has(part.id) || this.toolsFinished.has(part.id)) return [];
    return [{ type: 'tool.output', turnId: this.turnId, step: part.step, partId: part.id, callId: part.tool.callId, output: delta.text }];
  }

  /** The turn as the log has it now: whatever is new since the view before. */
  next(turn: TurnView): TurnEvent[] {
    if (turn.id !== this.turnId || this.done) return [];
    this.last = turn;
    const out: TurnEvent[] = [];
    if (!this.started && (turn.startedAt !== null || (turn.state !== 'requested' && !isSettled(turn)) || turn.steps.length > 0)) {
      this.started = true;
      out.push({ type: 'turn.started', turnId: this.turnId });
    }
    const parts = turn.messages[1].parts;
    for (const step of turn.steps) {
      if (!this.stepsStarted.has(step.step)) {
        this.stepsStarted.add(step.step);
        out.push({ type: 'step.started', turnId: this.turnId, step: step.step });
      }
      for (const part of parts) if (part.step === step.step) this.part(turn, part, out);
      if (step.outcome !== null && !this.stepsFinished.has(step.step)) {
        this.stepsFinished.add(step.step);
        out.push(this.stepFinished(step));
      }
    }
    // Parts of no step the view lists (none, as the log is written), and approvals of no part: never lost.
    for (const part of parts) this.part(turn, part, out);
    for (const approval of turn.approvals) this.approval(approval, undefined, out);
    if (!sameUsage(turn.usage, this.usage)) {
      this.usage = turn.usage;
      out.push({ type: 'usage', turnId: this.turnId, usage: turn.usage });
    }
    for (const activity of turn.activities.slice(this.activities)) out.push({ type: 'activity', turnId: this.turnId, kind: activity.kind, message: activity.message, data: activity.data });
    this.activities = Math.max(this.activities, turn.activities.length);
    if (isSettled(turn)) {
      this.done = true;
      out.push({ type: 'turn.settled', turnId: this.turnId, turn: settledTurn(this.threadId, turn) });
    }
    return out;
  }

  /** `turn.started` and `step.started` for a step the live channel types before the log has it, when it can only be the next one. */
  private openedLive(step: number): TurnEvent[] {
    const highest = Math.max(-Infinity, ...this.stepsStarted);
    const next = this.stepsStarted.size === 0 || (step === highest + 1 && this.stepsFinished.has(highest));
    if (!next) return [];
    const out: TurnEvent[] = [];
    if (!this.started) {
      this.started = true;
      out.push({ type: 'turn.started', turnId: this.turnId });
    }
    this.stepsStarted.add(step);
    out.push({ type: 'step.started', turnId: this.turnId, step });
    return out;
  }

  private stepFinished(step: StepView): TurnEvent {
    return { type: 'step.finished', turnId: this.turnId, step: step.step, outcome: step.outcome!, stopReason: step.stopReason, error: step.error, usage: step.usage };
  }

  /** What `text` adds to what was given of a part; nothing when it is behind (the live channel is ahead of the log) or elsewhere. */
  private grown(partId: string, kind: 'text' | 'reasoning', step: number, text: string): TurnEvent[] {
    const given = this.given.get(partId) ?? '';
    if (text.length <= given.length || !extendsText(text, given)) return [];
    this.given.set(partId, text);
    return [{ type: kind === 'text' ? 'text.delta' : 'reasoning.delta', turnId: this.turnId, step, partId, text: text.slice(given.length) }];
  }

  private part(turn: TurnView, part: PartView, out: TurnEvent[]): void {
    if (part.kind !== 'tool') {
      // Typed ahead of the log (held until its step started): given now.
      const typed = this.typed.get(part.id);
      out.push(...this.grown(part.id, part.kind, part.step, typed !== undefined && extendsText(typed, part.text) ? typed : part.text));
      return;
    }
    const tool = part.tool!;
    const base = { turnId: this.turnId, step: part.step, partId: part.id, callId: tool.callId };
    for (const approval of turn.approvals) if (approval.partId === part.id) this.approval(approval, part, out);
    const ended = endedParts.has(part.state);
    // Running, or past running: a result (or an outcome the repair could not tell) says it ran.
    const ran = part.state === 'running.tool.executing' || part.task !== null || (ended && part.state === 'completed') || tool.outcome === 'unknown';
    if (ran && !this.toolsStarted.has(part.id)) {
      this.toolsStarted.add(part.id);
      out.push({ type: 'tool.started', ...base, name: tool.name, input: tool.input });
    }
    const task = part.task;
    if (task && !this.tasksStarted.has(part.id)) {
      this.tasksStarted.add(part.id);
      out.push({ type: 'subagent.started', ...base, childThreadId: task.childThreadId, agent: task.agent, prompt: task.prompt, description: task.description });
    }
    if (task && task.status !== 'running' && !this.tasksSettled.has(part.id)) {
      this.tasksSettled.add(part.id);
      out.push({ type: 'subagent.settled', ...base, childThreadId: task.childThreadId, status: task.status, answer: task.answer, error: task.error, usage: task.usage });
    }
    if (ended && !this.toolsFinished.has(part.id)) {
      this.toolsFinished.add(part.id);
      out.push({ type: 'tool.finished', ...base, name: tool.name, input: tool.input, state: part.state as ToolEndState, result: tool.output ?? part.error, error: part.state === 'completed' ? null : (part.error ?? tool.output) });
    }
  }

  private approval(approval: ApprovalView, part: PartView | undefined, out: TurnEvent[]): void {
    if (!this.asked.has(approval.id)) {
      this.asked.add(approval.id);
      out.push({ type: 'approval.asked', turnId: this.turnId, approval });
    }
    if (approval.state !== 'pending' && !this.answered.has(approval.id)) {
      this.answered.add(approval.id);
      const decision = decisionOf(approval, part);
      out.push({ type: 'approval.answered', turnId: this.turnId, approvalId: approval.id, partId: approval.partId, callId: approval.toolCallId, decision, by: approval.decidedBy, note: approval.note });
    }
  }
}
