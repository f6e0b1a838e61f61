import { idPattern } from '../../bus/subjects.ts';
import type { Command } from './commands.ts';
import { type DomainEvent, IllegalTransition, TurnloomError } from '../../domain/index.ts';
import { settleOpenTurn } from './settleTurn.ts';
import type { ThreadDraft } from './threadDraft.ts';

const conflict = (message: string, details: Record<string, unknown> = {}) => new TurnloomError('conflict', message, details);

function requireActive(draft: ThreadDraft): void {
  if (draft.view.archived) throw conflict(`thread ${draft.threadId} is archived`, { threadId: draft.threadId });
}

function findApproval(draft: ThreadDraft, approvalId: string) {
  for (const turnId of draft.view.turnIds) {
    const approval = draft.view.turns[turnId]!.approvals.find((candidate) => candidate.id === approvalId);
    if (approval) return { turnId, approval };
  }
  throw new TurnloomError('not_found', `approval ${approvalId} not found in thread ${draft.threadId}`, { approvalId });
}

function requireOpenTurn(draft: ThreadDraft, turnId: string, event: string): void {
  if (draft.view.openTurnId !== turnId) throw new IllegalTransition('turn', draft.view.turns[turnId]?.state ?? 'absent', event);
}

/**
 * What a worker may write: the events of its own turn, what it learns of the
 * provider session, and activities. Never a client's intent (archiving,
 * stopping, reverting), which goes through its own command and checks.
 */
function workerMayRecord(event: DomainEvent, turnId: string): boolean {
  if ('turnId' in event && event.turnId !== null) return event.turnId === turnId;
  return event.type === 'session.started' || event.type === 'session.failed' || event.type === 'activity.recorded';
}

/** An event the machines refused becomes a diagnostic on the thread; the rest of the batch goes on. */
function recordLeniently(draft: ThreadDraft, turnId: string, event: DomainEvent): boolean {
  try {
    draft.emit(event);
    return true;
  } catch (error) {
    if (!(error instanceof IllegalTransition)) throw error;
    draft.emit({
      type: 'activity.recorded',
      // A diagnostic about a turn that is no longer open belongs to the thread.
      turnId: draft.view.openTurnId === turnId ? turnId : null,
      kind: 'diagnostic',
      message: `rejected ${event.type}: ${error.message}`,
      data: { turnId, rejected: event.type, machine: error.machine, state: error.state, event: error.event },
    });
    return false;
  }
}

/**
 * Turns a command into domain events on the draft, or throws a typed error.
 * Thread existence is checked by the engine before this runs; everything
 * about lifecycles is left to the machines through `draft.emit`.
 * Returns how many events were refused and recorded as diagnostics.
 */
export function decide(command: Command, draft: ThreadDraft): number {
  switch (command.type) {
    case 'thread.create':
      draft.emit({ type: 'thread.created', title: command.title, workspace: command.workspace, owner: command.owner });
      return 0;
    case 'thread.rename':
      requireActive(draft);
      draft.emit({ type: 'thread.renamed', title: command.title });
      return 0;
    case 'thread.archive':
      requireActive(draft);
      if (draft.view.openTurnId) throw conflict(`thread ${draft.threadId} has an open turn; interrupt it first`, { turnId: draft.view.openTurnId });
      draft.emit({ type: 'thread.archived' });
      return 0;
    case 'turn.start':
      requireActive(draft);
      draft.emit({ type: 'turn.requested', turnId: command.turnId, input: command.input, provider: command.provider });
      return 0;
    case 'turn.interrupt': {
      const turnId = command.turnId ?? draft.view.openTurnId;
      if (turnId === null) throw new IllegalTransition('turn', 'absent', 'turn.interruptRequested');
      draft.emit({ type: 'turn.interruptRequested', turnId, reason: command.reason });
      return 0;
    }
    case 'approval.respond': {
      const { turnId, approval } = findApproval(draft, command.approvalId);
      const common = { turnId, approvalId: approval.id, partId: approval.partId, by: command.by, note: command.note };
      draft.emit(command.decision === 'approve' ? { type: 'approval.granted', ...common } : { type: 'approval.denied', ...common });
      return 0;
    }
    case 'session.stop':
      draft.emit({ type: 'session.stopRequested', reason: command.reason });
      if (draft.view.openTurnId && !draft.view.turns[draft.view.openTurnId]!.state.startsWith('interrupting')) {
        draft.emit({ type: 'turn.interruptRequested', turnId: draft.view.openTurnId, reason: `session stopped: ${command.reason}` });
      }
      return 0;
    case 'checkpoint.revert':
      requireActive(draft);
      draft.emit({ type: 'checkpoint.revertRequested', checkpointId: command.checkpointId });
      return 0;
    case 'turn.record': {
      const foreign = command.events.find((event) => !workerMayRecord(event, command.turnId));
      if (foreign) throw new TurnloomError('invalid_payload', `turn.record for ${command.turnId} carries ${foreign.type}, which a worker may not record`, { event: foreign.type });
      // Clients answer approvals by id, so an approval must have one they can send.
      const unanswerable = command.events.find((event) => event.type === 'approval.requested' && !idPattern.test(event.approvalId));
      if (unanswerable) throw new TurnloomError('invalid_payload', `approval id must match ${idPattern}`, { event: unanswerable.type });
      return command.events.filter((event) => !recordLeniently(draft, command.turnId, event)).length;
    }
    case 'turn.settle':
      requireOpenTurn(draft, command.turnId, command.outcome.kind === 'failed' ? 'turn.failed' : 'turn.interrupted');
      settleOpenTurn(draft, command.turnId, command.outcome);
      return 0;
    case 'approval.expire': {
      const { turnId, approval } = findApproval(draft, command.approvalId);
      draft.emit({ type: 'approval.expired', turnId, approvalId: approval.id, partId: approval.partId });
      return 0;
    }
    case 'session.confirmStopped':
      if (draft.view.openTurnId) throw conflict(`turn ${draft.view.openTurnId} still holds the session`, { turnId: draft.view.openTurnId });
      draft.emit({ type: 'session.stopped' });
      return 0;
    case 'turn.repair':
      requireOpenTurn(draft, command.turnId, 'turn.interrupted');
      // The provider session lived in the dead process: say so before the turn lets go of it.
      if (['starting', 'ready', 'running', 'stopping'].includes(draft.view.session.state)) {
        draft.emit({ type: 'session.failed', reason: command.reason });
      }
      settleOpenTurn(draft, command.turnId, { kind: 'interrupted', cause: 'repair', reason: command.reason });
      return 0;
  }
}
