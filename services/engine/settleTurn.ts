import { type ToolOutcome, isOpenPart } from '../../domain/index.ts';
import type { ThreadDraft } from './threadDraft.ts';

/** How an open turn ends when it cannot end on its own. */
export type TurnOutcome =
  | { kind: 'interrupted'; cause: 'provider' | 'deadline' | 'repair'; reason: string }
  | { kind: 'failed'; error: string };

const toolResultText: Record<ToolOutcome, string> = {
  notStarted: 'This tool call was never started: the turn stopped before it ran. It is safe to retry.',
  unknown: 'The outcome of this tool call is unknown: the turn stopped while it was running. Verify its effects before retrying.',
};


/**
 * Closes everything a turn still has open, then the turn itself, so that
 * steps and turns stay paired, every tool call has a result the model can
 * read, and no approval waits forever. An interrupt goes through
 * `interrupting` first (the chart requires it); a failure closes in place.
 */
export function settleOpenTurn(draft: ThreadDraft, turnId: string, outcome: TurnOutcome): void {
  const turn = () => draft.view.turns[turnId]!;
  const reason = outcome.kind === 'failed' ? outcome.error : outcome.reason;
  // A session still starting for this turn will not come up any more: say so, or it would wait forever.
  if (draft.view.session.state === 'starting') draft.emit({ type: 'session.failed', reason: `the session never started: ${reason}` });
  if (outcome.kind === 'interrupted' && !turn().state.startsWith('interrupting')) draft.emit({ type: 'turn.interruptRequested', turnId, reason });

  for (const approval of turn().approvals) {
    if (approval.state === 'pending') draft.emit({ type: 'approval.cancelled', turnId, approvalId: approval.id, reason });
    else if (approval.state === 'approved' || approval.state === 'denied') draft.emit({ type: 'approval.undelivered', turnId, approvalId: approval.id, reason });
  }

  const settled: Array<{ partId: string; outcome: ToolOutcome | null }> = [];
  for (const part of turn().messages[1].parts) {
    if (!isOpenPart(part)) continue;
    const toolOutcome: ToolOutcome | null = part.tool ? (part.state === 'running.tool.executing' ? 'unknown' : 'notStarted') : null;
    if (outcome.kind === 'failed' && !part.tool) {
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
    settled.push({ partId: part.id, outcome: toolOutcome });
  }

  const openStep = draft.view.cursor.openStep;
  if (openStep !== null) {
    draft.emit({
      type: 'step.finished',
      turnId,
      step: openStep,
      outcome: outcome.kind === 'failed' ? 'error' : 'interrupted',
      finishReason: null,
      usage: null,
      error: reason,
    });
  }
  if (outcome.kind === 'interrupted' && outcome.cause !== 'provider') {
    draft.emit({
      type: 'activity.recorded',
      turnId,
      kind: outcome.cause === 'repair' ? 'repair' : 'info',
      message: outcome.cause === 'repair' ? `turn settled after a restart: ${reason}` : `interrupt deadline passed: ${reason}`,
      data: { settledParts: settled, closedStep: openStep },
    });
  }
  if (outcome.kind === 'failed') draft.emit({ type: 'turn.failed', turnId, error: reason });
  else draft.emit({ type: 'turn.interrupted', turnId, cause: outcome.cause, reason });
}
