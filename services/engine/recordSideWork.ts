import { type DomainEvent, type SideTaskReport, type ThreadView, TurnloomError, type TurnView } from '../../domain/index.ts';
import type { Command } from './commands.ts';
import type { ThreadDraft } from './threadDraft.ts';

type SideWorkCommand = Extract<Command, { type: 'sideWork.record' }>;

/** How the engine took a side task's result: applied, left alone (and why), or there was none. */
type Disposition = { outcome: 'applied'; text: string } | { outcome: 'skipped'; text: string; reason: string } | { outcome: 'failed'; error: string };

/**
 * Why a result is not applied, decided on the log as it is now: a title only
 * replaces the one the thread was created with, so a rename that landed
 * first (a person's) wins; a turn is summarised once; an archived thread is
 * left as it is.
 */
function notAppliedBecause(view: ThreadView, turn: TurnView, report: SideTaskReport): string | null {
  if (view.archived) return 'the thread is archived';
  if (report.kind === 'title') return view.renamedAt === null ? null : `the thread was renamed (seq ${view.renamedAt})`;
  return turn.summary === null ? null : 'the turn has a summary already';
}

function dispositionOf(view: ThreadView, turn: TurnView, report: SideTaskReport): Disposition {
  if (report.outcome.kind === 'failed') return { outcome: 'failed', error: report.outcome.error };
  const { text } = report.outcome;
  const reason = notAppliedBecause(view, turn, report);
  return reason === null ? { outcome: 'applied', text } : { outcome: 'skipped', text, reason };
}

function messageOf(report: SideTaskReport, disposition: Disposition): string {
  const what = report.kind === 'title' ? 'title' : `summary of turn ${report.turnId}`;
  switch (disposition.outcome) {
    case 'applied':
      return report.kind === 'title' ? `titled the thread "${disposition.text}"` : `summarized turn ${report.turnId}: ${disposition.text}`;
    case 'skipped':
      return `generated ${what} "${disposition.text}" not applied: ${disposition.reason}`;
    case 'failed':
      return `no ${what}: ${disposition.error}`;
  }
}

function applying(report: SideTaskReport, text: string): DomainEvent {
  return report.kind === 'title' ? { type: 'thread.renamed', title: text } : { type: 'turn.summarized', settledTurnId: report.turnId, summary: text };
}

/**
 * Records a worker's side work for a completed turn as a thread activity
 * (the turn is closed: it takes no more events), with the model, usage and
 * outcome, then applies the result if it still may be. A failure changes
 * nothing but that activity.
 */
export function recordSideWork(draft: ThreadDraft, { workerId, report }: SideWorkCommand): void {
  const turn = draft.view.turns[report.turnId];
  if (!turn) throw new TurnloomError('not_found', `turn ${report.turnId} not found in thread ${draft.threadId}`, { turnId: report.turnId });
  if (turn.state !== 'completed') throw new TurnloomError('conflict', `turn ${report.turnId} is ${turn.state}; side work follows only a completed turn`, { turnId: report.turnId, state: turn.state });
  const disposition = dispositionOf(draft.view, turn, report);
  draft.emit({
    type: 'activity.recorded',
    turnId: null,
    kind: `sideWork.${report.kind}`,
    message: messageOf(report, disposition),
    data: {
      turnId: report.turnId,
      workerId,
      model: report.model,
      usage: report.usage,
      outcome: disposition.outcome,
      text: disposition.outcome === 'failed' ? null : disposition.text,
      reason: disposition.outcome === 'skipped' ? disposition.reason : null,
      error: disposition.outcome === 'failed' ? disposition.error : null,
    },
  });
  if (disposition.outcome === 'applied') draft.emit(applying(report, disposition.text));
}
