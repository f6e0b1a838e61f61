import { type InterruptCause, type PartView, type ToolOutcome, type TurnView, isOpenPart } from '../../domain/index.ts';
import type { ThreadDraft } from './threadDraft.ts';
import type { TurnOutcome } from './commands.ts';
export type { TurnOutcome } from './commands.ts';

/** How an open turn ends when it cannot end on its own. */

const toolResultText: Record<ToolOutcome, string> = {
  notStarted: 'This tool call was never started: the turn stopped before it ran. It is safe to retry.',
  unknown: 'The outcome of this tool call is unknown: the turn stopped while it was running. Verify its effects before retrying.',
};


/** What closing a step settled, for the activity that says so. */
export interface ClosedStep {
  settledParts: Array<{ partId: string; outcome: ToolOutcome | null }>;
  closedStep: number | null;
}

/**
 * Closes what the turn's open step still has open, so that every tool call
 * has a result the model can read and no approval waits forever: pending
 * approvals are cancelled (recorded decisions marked undelivered), open
 * parts are interrupted (a tool call says whether it never started or its
 * outcome is unknown) or, on a failure, failed; then the step finishes.
 */
export function closeOpenStep(draft: ThreadDraft, turnId: string, reason: string, failed: boolean): ClosedStep {
  const turn = () => draft.view.turns[turnId]!;
  for (const approval of turn().approvals) {
    if (approval.state === 'pending') draft.emit({ type: 'approval.cancelled', turnId, approvalId: approval.id, reason });
    else if (approval.state === 'approved' || approval.state === 'denied') draft.emit({ type: 'approval.undelivered', turnId, approvalId: approval.id, reason });
  }
  const settledParts: ClosedStep['settledParts'] = [];
  for (const part of turn().messages[1].parts) {
    if (!isOpenPart(part)) continue;
    const toolOutcome: ToolOutcome | null = part.tool ? (part.state === 'running.tool.executing' ? 'unknown' : 'notStarted') : null;
    if (failed && !part.tool) {
      draft.emit({ type: 'part.failed', turnId, partId: part.id, error: reason });
    } else {
      draft.emit({
        type: 'part.interrupted',
        turnId,
        partId: part.id,
        reason,
        tool: part.tool && toolOutcome ? { toolCallId: part.tool.callId, outcome: toolOutcome, result: toolResultText[toolOutcome] } : null,
      });
    }
    settledParts.push({ partId: part.id, outcome: toolOutcome });
  }
  const closedStep = draft.view.cursor.openStep;
  if (closedStep !== null) {
    draft.emit({ type: 'step.finished', turnId, step: closedStep, outcome: failed ? 'error' : 'interrupted', finishReason: null, usage: null, error: reason });
  }
  return { settledParts, closedStep };
}

/** Tool calls of a complete answer that have not started: they can be run by whoever holds the turn next. */
const notStartedCallStates = new Set(['running.tool.inputReady', 'running.tool.awaitingApproval']);

/**
 * A call handed to a child agent: its outcome is not lost with the worker
 * that waited for it, since the child runs on (or has settled already), and
 * its result comes to the parent's log. Whoever holds the turn next records
 * it, waiting for it first if need be; it is never run again.
 */
const waitsOnChild = (part: PartView): boolean => part.state === 'running.tool.executing' && part.task !== null;
const canTakeUp = (part: PartView): boolean => notStartedCallStates.has(part.state) || waitsOnChild(part);
const toolPhaseStates = new Set(['running.responded', 'running.runningTools', 'running.awaitingApproval']);

/**
 * Whether a turn that loses its worker can keep its open step: the model's
 * answer is complete, every open part is a tool call that is waiting or
 * running, and at least one has not started. Its calls (and their
 * approvals, granted or still pending) are then run by the next worker,
 * exactly once; a step still streaming cannot be picked up and is closed.
 */
export function isResumableStep(turn: Pick<TurnView, 'state' | 'messages'>): boolean {
  if (!toolPhaseStates.has(turn.state)) return false;
  const open = turn.messages[1].parts.filter(isOpenPart);
  return open.every((part) => part.tool !== null && (notStartedCallStates.has(part.state) || part.state === 'running.tool.executing')) && open.some(canTakeUp);
}

/** Where a worker can take a turn up: before it starts, between steps, or in a step it can resume. */
export const isHandOverState = (turn: Pick<TurnView, 'state' | 'messages'>): boolean => turn.state === 'requested' || turn.state === 'running.betweenSteps' || isResumableStep(turn);

/**
 * Keeps a resumable step open for the next worker: only a call that was
 * running gets its result, an unknown outcome (it may have had effects, so
 * it is never run again); calls not started and their approvals stay as the
 * log has them.
 */
export function holdOpenStep(draft: ThreadDraft, turnId: string, reason: string): { unknownOutcome: string[]; waiting: string[] } {
  const parts = draft.view.turns[turnId]!.messages[1].parts;
  const unknownOutcome = parts.filter((part) => part.tool && part.state === 'running.tool.executing' && !waitsOnChild(part));
  for (const part of unknownOutcome) {
    draft.emit({ type: 'part.interrupted', turnId, partId: part.id, reason, tool: { toolCallId: part.tool!.callId, outcome: 'unknown', result: toolResultText.unknown } });
  }
  return { unknownOutcome: unknownOutcome.map((part) => part.id), waiting: parts.filter(canTakeUp).map((part) => part.id) };
}

const settleNotes: Record<Exclude<InterruptCause, 'provider'>, { kind: 'repair' | 'info'; message: (reason: string) => string }> = {
  repair: { kind: 'repair', message: (reason) => `turn settled after a restart: ${reason}` },
  deadline: { kind: 'info', message: (reason) => `interrupt deadline passed: ${reason}` },
  workerLost: { kind: 'repair', message: (reason) => `turn settled without its worker: ${reason}` },
  engine: { kind: 'info', message: (reason) => `no worker held the turn, so the engine confirmed the stop: ${reason}` },
};

/**
 * Closes everything a turn still has open, then the turn itself, so that
 * steps and turns stay paired, every tool call has a result the model can
 * read, and no approval waits forever. An interrupt goes through
 * `interrupting` first (the chart requires it); a failure closes in place.
 */
export function settleOpenTurn(draft: ThreadDraft, turnId: string, outcome: TurnOutcome): void {
  const reason = outcome.kind === 'failed' ? outcome.error : outcome.reason;
  // A session still starting for this turn will not come up any more: say so, or it would wait forever.
  if (draft.view.session.state === 'starting') draft.emit({ type: 'session.failed', reason: `the session never started: ${reason}` });
  if (outcome.kind === 'interrupted' && !draft.view.turns[turnId]!.state.startsWith('interrupting')) draft.emit({ type: 'turn.interruptRequested', turnId, reason });
  const closed = closeOpenStep(draft, turnId, reason, outcome.kind === 'failed');
  if (outcome.kind === 'interrupted' && outcome.cause !== 'provider') {
    const note = settleNotes[outcome.cause];
    draft.emit({ type: 'activity.recorded', turnId, kind: note.kind, message: note.message(reason), data: { ...closed } });
  }
  if (outcome.kind === 'failed') draft.emit({ type: 'turn.failed', turnId, error: reason });
  else draft.emit({ type: 'turn.interrupted', turnId, cause: outcome.cause, reason });
}
