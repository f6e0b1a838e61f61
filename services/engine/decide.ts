import { idPattern } from '../../bus/subjects.ts';
import { DEFAULT_ENVIRONMENT, type DomainEvent, IllegalTransition, type RequestHeader, TurnloomError, defaultPermissions } from '../../domain/index.ts';
import { deriveMessages, headerDigest, messagesDigest, requestDigest } from '../runtime/deriveRequest.ts';
import { createHash } from 'node:crypto';
import { type Command, type LeaseProof, type Refusal, childThreadIdOf } from './commands.ts';
import { recordSideWork } from './recordSideWork.ts';
import { revertScope } from './revertScope.ts';
import { closeOpenStep, holdOpenStep, isHandOverState, isResumableStep, settleOpenTurn } from './settleTurn.ts';
import type { ThreadDraft } from './threadDraft.ts';
import { followQueue, startTurn } from './turnQueue.ts';

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

/** The revert under way, which must be this one: a late or repeated end of another one changes nothing. */
function requireRevert(draft: ThreadDraft, revertId: string): NonNullable<ThreadDraft['view']['revert']> {
  const revert = draft.view.revert;
  if (revert?.revertId !== revertId) throw conflict(`revert ${revertId} is not under way${revert ? ` (${revert.revertId} is)` : ''}`, { revertId });
  return revert;
}

function requireOpenTurn(draft: ThreadDraft, turnId: string, event: string): void {
  if (draft.view.openTurnId !== turnId) throw new IllegalTransition('turn', draft.view.turns[turnId]?.state ?? 'absent', event, turnId);
}

/** Lease events and a child's outcome are the engine's to write: a worker never records its own. */
const engineOnly = new Set<DomainEvent['type']>(['turn.leased', 'turn.leaseLost', 'task.settled']);

/**
 * What a worker may write: the events of its own turn, what it learns of the
 * provider session, and activities. Never a client's intent (archiving,
 * stopping, reverting), which goes through its own command and checks.
 */
function workerMayRecord(event: DomainEvent, turnId: string): boolean {
  if (engineOnly.has(event.type)) return false;
  if ('turnId' in event && event.turnId !== null) return event.turnId === turnId;
  return event.type === 'session.started' || event.type === 'session.failed' || event.type === 'activity.recorded' || event.type === 'checkpoint.unavailable';
}

/** The hash a lease keeps of its key. */
export const leaseKeyHash = (key: string): string => createHash('sha256').update(key).digest('hex');

/** A worker writes into a turn only while it holds the turn's lease, key and all; no proof: the engine's own, unleased writer. */
function requireLease(draft: ThreadDraft, turnId: string, proof: LeaseProof | undefined): void {
  if (proof === undefined) return;
  const lease = draft.view.turns[turnId]?.lease ?? null;
  if (lease?.token !== proof.token || lease.keyHash !== leaseKeyHash(proof.key)) {
    throw new TurnloomError('fenced', `lease ${proof.token} on turn ${turnId} is not held${lease ? ` (worker ${lease.workerId} holds ${lease.token})` : ''}; nothing was written`, {
      turnId,
      token: proof.token,
      holder: lease ? { workerId: lease.workerId, token: lease.token } : null,
    });
  }
}

/** The header the log holds at `seq`, read from the event itself (the view's copy is only the worker's hint). */
function loggedHeader(draft: ThreadDraft, seq: number): RequestHeader {
  const event = draft.eventAt(seq);
  if (event?.type !== 'request.header') throw new TurnloomError('internal', `thread ${draft.threadId}: no request header at seq ${seq}`, { seq });
  return event.header;
}

/**
 * What the model is sent must be what the log says: a step's digest is
 * checked against the request derived from this log, right here: the
 * header read from its event, and the conversation. A header is checked
 * against its own digest as it is recorded.
 */
function checkDigest(draft: ThreadDraft, event: DomainEvent): void {
  if (event.type === 'request.header' && headerDigest(event.header) !== event.header.digest) {
    throw new TurnloomError('conflict', `request header of turn ${event.turnId} does not match its digest; refusing it`, { turnId: event.turnId });
  }
  if (event.type !== 'step.started' || event.digest === null) return;
  const messages = deriveMessages(draft.view);
  const recorded = draft.view.header;
  const expected = recorded ? requestDigest(loggedHeader(draft, recorded.seq), messages) : messagesDigest(messages);
  if (expected !== event.digest) {
    throw new TurnloomError('conflict', `step ${event.step} of turn ${event.turnId} would send a request (system prompt, tools, model or conversation) that diverges from the durable log; refusing it before anything is sent`, {
      expected,
      sent: event.digest,
      ...(recorded ? { headerSeq: recorded.seq } : {}),
    });
  }
}

/** An event the machines refused becomes a diagnostic on the thread; the rest of the batch goes on. */
function recordLeniently(draft: ThreadDraft, turnId: string, event: DomainEvent, index: number): Refusal | null {
  checkDigest(draft, event);
  try {
    draft.emit(event);
    return null;
  } catch (error) {
    if (!(error instanceof IllegalTransition)) throw error;
    draft.noteRefusal(error);
    draft.emit({
      type: 'activity.recorded',
      // A diagnostic about a turn that is no longer open belongs to the thread.
      turnId: draft.view.openTurnId === turnId ? turnId : null,
      kind: 'diagnostic',
      message: `rejected ${event.type}: ${error.message}`,
      data: { turnId, rejected: event.type, machine: error.machine, state: error.state, event: error.event },
    });
    return { index, event: event.type, machine: error.machine, state: error.state };
  }
}

/** The turn's lease lapsed: say so, then close what its worker left open, and either wait for another worker, settle or fail. */
function expireLease(draft: ThreadDraft, command: Extract<Command, { type: 'turn.expireLease' }>): void {
  const { turnId, token, reason } = command;
  const turn = () => draft.view.turns[turnId]!;
  if (turn().lease?.token !== token) throw conflict(`lease ${token} on turn ${turnId} was already released`, { turnId, token });
  const workerId = turn().lease!.workerId;
  draft.emit({ type: 'turn.leaseLost', turnId, workerId, token, reason });
  // A compaction the lost worker was making will never end: the session takes turns again.
  if (draft.view.session.state === 'compacting') draft.emit({ type: 'compaction.failed', turnId, reason: `worker ${workerId} was lost while compacting: ${reason}` });
  if (turn().state.startsWith('interrupting')) {
    settleOpenTurn(draft, turnId, { kind: 'interrupted', cause: 'workerLost', reason });
  } else if (turn().leases > command.maxResumes) {
    settleOpenTurn(draft, turnId, { kind: 'failed', error: `the turn lost its worker ${turn().leases} times (last: ${reason}); it is not resumed again` });
  } else if (isResumableStep(turn())) {
    const held = holdOpenStep(draft, turnId, `worker ${workerId} was lost while it ran: ${reason}`);
    draft.emit({
      type: 'activity.recorded',
      turnId,
      kind: 'repair',
      message: `worker ${workerId} was lost (${reason}); the step's remaining tool calls wait for another worker`,
      data: { workerId, ...held },
    });
  } else {
    const closed = closeOpenStep(draft, turnId, `worker ${workerId} was lost: ${reason}`, false);
    draft.emit({ type: 'activity.recorded', turnId, kind: 'repair', message: `worker ${workerId} was lost (${reason}); the turn waits for another worker`, data: { workerId, ...closed } });
  }
}

/**
 * Turns a command into domain events on the draft, or throws a typed error.
 * Thread existence is checked by the engine before this runs; everything
 * about lifecycles is left to the machines through `draft.emit`.
 * Returns the events that were refused and recorded as diagnostics instead.
 */
export function decide(command: Command, draft: ThreadDraft): Refusal[] {
  const refused = decideCommand(command, draft);
  followQueue(draft);
  return refused;
}

function decideCommand(command: Command, draft: ThreadDraft): Refusal[] {
  switch (command.type) {
    case 'thread.create':
      draft.emit({
        type: 'thread.created',
        title: command.title,
        workspace: command.workspace,
        owner: command.owner,
        environment: command.environment ?? DEFAULT_ENVIRONMENT,
        permissions: command.permissions ?? defaultPermissions(),
        ...(command.parent ? { parent: command.parent } : {}),
      });
      if (command.compaction === 'off' || command.agent) {
        draft.emit({ type: 'thread.configured', mode: null, rules: null, ...(command.compaction === 'off' ? { compaction: 'off' } : {}), ...(command.agent ? { agent: command.agent } : {}) });
      }
      return [];
    case 'thread.configure':
      requireActive(draft);
      draft.emit({ type: 'thread.configured', mode: command.mode, rules: command.rules, ...(command.compaction ? { compaction: command.compaction } : {}), ...(command.agent ? { agent: command.agent } : {}) });
      return [];
    case 'thread.rename':
      requireActive(draft);
      draft.emit({ type: 'thread.renamed', title: command.title });
      return [];
    case 'thread.archive':
      requireActive(draft);
      if (draft.view.openTurnId) throw conflict(`thread ${draft.threadId} has an open turn; interrupt it first`, { turnId: draft.view.openTurnId });
      if (draft.view.revert) throw conflict(`thread ${draft.threadId} is being reverted; wait for the revert to end`, { revertId: draft.view.revert.revertId });
      draft.emit({ type: 'thread.archived' });
      return [];
    case 'turn.start':
      requireActive(draft);
      startTurn(draft, command);
      return [];
    case 'turn.interrupt': {
      const turnId = command.turnId ?? draft.view.openTurnId;
      if (turnId === null) throw new IllegalTransition('turn', 'absent', 'turn.interruptRequested');
      draft.emit({ type: 'turn.interruptRequested', turnId, reason: command.reason });
      return [];
    }
    case 'approval.respond': {
      const { turnId, approval } = findApproval(draft, command.approvalId);
      const common = { turnId, approvalId: approval.id, partId: approval.partId, by: command.by, note: command.note };
      draft.emit(command.decision === 'deny' ? { type: 'approval.denied', ...common } : { type: 'approval.granted', ...common });
      // `always`: this very call runs from now on, in this thread, without asking; a `*` the model wrote allows nothing more.
      if (command.decision === 'always') {
        draft.emit({ type: 'permission.ruleAdded', rule: { tool: approval.toolName, pattern: approval.subject, decision: 'allow', match: 'exact' }, by: command.by, approvalId: approval.id });
      }
      return [];
    }
    case 'session.stop':
      draft.emit({ type: 'session.stopRequested', reason: command.reason });
      if (draft.view.openTurnId && !draft.view.turns[draft.view.openTurnId]!.state.startsWith('interrupting')) {
        draft.emit({ type: 'turn.interruptRequested', turnId: draft.view.openTurnId, reason: `session stopped: ${command.reason}` });
      }
      return [];
    case 'checkpoint.revert': {
      requireActive(draft);
      const { turnIds, turns } = revertScope(draft.view, command.turnId);
      // Named by its place in the log: one revert per event, and the same on every retry of the command.
      draft.emit({ type: 'checkpoint.revertStarted', revertId: `revert-${draft.view.seq + 1}`, turnIds, turns, by: command.by });
      return [];
    }
    case 'checkpoint.finishRevert': {
      const revert = requireRevert(draft, command.revertId);
      const commit = draft.view.turns[revert.turnIds[0]!]!.checkpoint!.before!.commit;
      draft.emit({ type: 'checkpoint.reverted', revertId: revert.revertId, turnIds: revert.turnIds, commit, by: revert.by, saved: command.saved, ...command.changes });
      return [];
    }
    case 'checkpoint.abandonRevert':
      requireRevert(draft, command.revertId);
      draft.emit({ type: 'checkpoint.revertFailed', revertId: command.revertId, reason: command.reason, conflicts: command.conflicts, saved: command.saved });
      return [];
    case 'turn.record': {
      const foreign = command.events.find((event) => !workerMayRecord(event, command.turnId));
      if (foreign) throw new TurnloomError('invalid_payload', `turn.record for ${command.turnId} carries ${foreign.type}, which a worker may not record`, { event: foreign.type });
      // Clients answer approvals by id, so an approval must have one they can send.
      const unanswerable = command.events.find((event) => event.type === 'approval.requested' && !idPattern.test(event.approvalId));
      if (unanswerable) throw new TurnloomError('invalid_payload', `approval id must match ${idPattern}`, { event: unanswerable.type });
      // A delegation names the child its call makes, never a thread that exists for something else.
      const misnamed = command.events.find((event) => event.type === 'task.delegated' && event.childThreadId !== childThreadIdOf(command.threadId, event.toolCallId));
      if (misnamed) throw new TurnloomError('invalid_payload', `task.delegated must name the child thread its call makes (${childThreadIdOf(command.threadId, (misnamed as { toolCallId: string }).toolCallId)})`, { event: misnamed.type });
      requireLease(draft, command.turnId, command.lease);
      return command.events.map((event, index) => recordLeniently(draft, command.turnId, event, index)).filter((refusal): refusal is Refusal => refusal !== null);
    }
    case 'turn.settle':
      requireOpenTurn(draft, command.turnId, command.outcome.kind === 'failed' ? 'turn.failed' : 'turn.interrupted');
      requireLease(draft, command.turnId, command.lease);
      settleOpenTurn(draft, command.turnId, command.outcome);
      return [];
    case 'turn.lease': {
      requireOpenTurn(draft, command.turnId, 'turn.leased');
      const turn = draft.view.turns[command.turnId]!;
      if (turn.lease) throw conflict(`turn ${command.turnId} is held by worker ${turn.lease.workerId}`, { turnId: command.turnId, holder: turn.lease.workerId });
      // A turn is handed over only where a worker can pick it up: before it starts, between steps, or with a step whose answer is complete.
      if (!isHandOverState(turn)) throw new IllegalTransition('turn', turn.state, 'turn.leased', turn.id);
      draft.emit({ type: 'turn.leased', turnId: command.turnId, workerId: command.workerId, token: draft.view.seq + 1, keyHash: command.keyHash, process: command.process ?? null });
      return [];
    }
    case 'turn.expireLease':
      requireOpenTurn(draft, command.turnId, 'turn.leaseLost');
      expireLease(draft, command);
      return [];
    case 'approval.expire': {
      const { turnId, approval } = findApproval(draft, command.approvalId);
      draft.emit({ type: 'approval.expired', turnId, approvalId: approval.id, partId: approval.partId });
      return [];
    }
    case 'session.confirmStopped':
      if (draft.view.openTurnId) throw conflict(`turn ${draft.view.openTurnId} still holds the session`, { turnId: draft.view.openTurnId });
      draft.emit({ type: 'session.stopped' });
      return [];
    case 'turn.repair':
      requireOpenTurn(draft, command.turnId, 'turn.interrupted');
      // The provider session lived in the dead process: say so before the turn lets go of it.
      if (['starting', 'ready', 'running', 'stopping'].includes(draft.view.session.state)) {
        draft.emit({ type: 'session.failed', reason: command.reason });
      }
      settleOpenTurn(draft, command.turnId, { kind: 'interrupted', cause: 'repair', reason: command.reason });
      return [];
    case 'sideWork.record':
      recordSideWork(draft, command);
      return [];
    case 'task.settle': {
      // Only while the call waits for it: a parent that settled meanwhile closed the call with a result of its own.
      const part = draft.view.openTurnId === command.turnId ? draft.view.turns[command.turnId]!.messages[1].parts.find((candidate) => candidate.id === command.partId) : undefined;
      if (part?.state !== 'running.tool.executing' || part.task?.childThreadId !== command.childThreadId || part.task.status !== 'running') return [];
      const { turnId, partId, childThreadId, status, answer, error, usage } = command;
      draft.emit({ type: 'task.settled', turnId, partId, childThreadId, status, answer, error, usage });
      return [];
    }
  }
}
