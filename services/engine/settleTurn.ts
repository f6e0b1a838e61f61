import { type InterruptCause, type ToolOutcome, isOpenPart } from '../../domain/index.ts';
import type { ThreadDraft } from './threadDraft.ts';

/** How an open turn ends when it cannot end on its own. */
export type TurnOutcome = { kind: 'interrupted'; cause: InterruptCause; reason: string } | { kind: 'failed'; error: string };

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
