import type { ToolOutcome } from './domainEvents.ts';
import type { ThreadDraft } from './threadDraft.ts';

const toolResultText: Record<ToolOutcome, string> = {
  notStarted: 'This tool call was never started: the turn stopped before it ran. It is safe to retry.',
  unknown: 'The outcome of this tool call is unknown: the turn stopped while it was running. Verify its effects before retrying.',
};

const isFinal = (state: string) => !state.startsWith('running') && state !== 'pending';

/**
 * Closes everything a turn still has open, then the turn itself, so that
 * steps and turns stay paired, every tool call has a result the model can
 * read, and no approval waits forever. Used by the interrupt deadline and by
 * crash repair; `cause` says which.
 */
export function settleOpenTurn(draft: ThreadDraft, turnId: string, cause: 'deadline' | 'repair', reason: string): void {
  const turn = () => draft.view.turns[turnId]!;
  if (!turn().state.startsWith('interrupting')) draft.emit({ type: 'turn.interruptRequested', turnId, reason });

  for (const approval of turn().approvals) {
    if (approval.state === 'pending') draft.emit({ type: 'approval.cancelled', turnId, approvalId: approval.id, reason });
    else if (approval.state === 'approved' || approval.state === 'denied') draft.emit({ type: 'approval.undelivered', turnId, approvalId: approval.id, reason });
  }

  const settled: Array<{ partId: string; outcome: ToolOutcome | null }> = [];
  for (const part of turn().messages[1].parts) {
    if (isFinal(part.state)) continue;
    const outcome: ToolOutcome | null = part.tool ? (part.state === 'running.tool.executing' ? 'unknown' : 'notStarted') : null;
    draft.emit({
      type: 'part.interrupted',
      turnId,
      partId: part.id,
      reason,
      tool: part.tool && outcome ? { toolCallId: part.tool.callId, outcome, result: toolResultText[outcome] } : null,
    });
    settled.push({ partId: part.id, outcome });
  }

  const openStep = draft.view.cursor.openStep;
  if (openStep !== null) {
    draft.emit({ type: 'step.finished', turnId, step: openStep, outcome: 'interrupted', finishReason: null, usage: null, error: reason });
  }
  draft.emit({
    type: 'activity.recorded',
    turnId,
    kind: cause === 'repair' ? 'repair' : 'info',
    message: cause === 'repair' ? `turn settled after a restart: ${reason}` : `interrupt deadline passed: ${reason}`,
    data: { settledParts: settled, closedStep: openStep },
  });
  draft.emit({ type: 'turn.interrupted', turnId, cause, reason });
}
