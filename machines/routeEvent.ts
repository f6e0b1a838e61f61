import type { ApprovalEvent, PartEvent, PartKind, SessionEvent, TurnEvent } from './index.ts';
import type { DomainEvent } from '../domain/index.ts';

/**
 * One lifecycle event for one actor. `create` means the domain event brings
 * the actor into being (in its initial state) before `event`, if any, is sent.
 */
export type Delivery =
  | { machine: 'session'; id: 'session'; create: null; event: SessionEvent }
  | { machine: 'turn'; id: string; create: { turnId: string } | null; event: TurnEvent | null }
  | { machine: 'part'; id: string; create: { partId: string; kind: PartKind } | null; event: PartEvent }
  | { machine: 'approval'; id: string; create: { approvalId: string } | null; event: ApprovalEvent | null };

const session = (event: SessionEvent): Delivery => ({ machine: 'session', id: 'session', create: null, event });
const turn = (id: string, event: TurnEvent): Delivery => ({ machine: 'turn', id, create: null, event });
const part = (id: string, event: PartEvent): Delivery => ({ machine: 'part', id, create: null, event });
const approval = (id: string, event: ApprovalEvent): Delivery => ({ machine: 'approval', id, create: null, event });

/**
 * Which actors a domain event concerns and what each of them is told. A domain
 * event is accepted only if every one of its deliveries is.
 */
export function routeEvent(event: DomainEvent): Delivery[] {
  switch (event.type) {
    case 'thread.created':
    case 'thread.renamed':
    case 'thread.archived':
    case 'activity.recorded':
    case 'checkpoint.captured':
    case 'checkpoint.unavailable':
    // A summary comes after its turn settled: no lifecycle is left to tell.
    case 'turn.summarized':
    // Who holds a turn is the engine's business, not a lifecycle's: leases are checked in decide.
    case 'turn.leased':
    case 'turn.leaseLost':
    case 'thread.configured':
    case 'permission.ruleAdded':
    // A queued turn is an entry in the thread's queue until it is requested; it has no actor yet.
    case 'turn.queued':
    // A child is a thread of its own, with its own lifecycles; the parent's call stays executing until its result.
    case 'task.delegated':
    case 'task.settled':
      return [];
    case 'checkpoint.revertStarted':
      return [session({ type: 'revert.begin' })];
    case 'checkpoint.revertFailed':
      return [session({ type: 'revert.end' })];
    // Older logs record a revert with this one event, which no lifecycle heard of.
    case 'checkpoint.reverted':
      return event.revertId === undefined ? [] : [session({ type: 'revert.end' })];
    case 'input.steered':
      return [turn(event.turnId, { type: 'input.steered' })];
    case 'input.claimed':
      return [turn(event.turnId, { type: 'input.claimed', count: event.inputIds.length })];
    case 'context.replaced':
      return [turn(event.turnId, { type: 'context.replaced' })];
    case 'request.context':
      return [turn(event.turnId, { type: 'request.context' })];
    case 'request.header':
      return [turn(event.turnId, { type: 'request.header' })];
    case 'compaction.started':
      return [session({ type: 'compaction.started' })];
    case 'context.compacted':
      return [session({ type: 'compaction.ended' }), turn(event.turnId, { type: 'context.replaced' })];
    case 'compaction.failed':
      return [session({ type: 'compaction.ended' })];
    case 'session.started':
    case 'session.failed':
    case 'session.stopRequested':
    case 'session.stopped':
      return [session(event)];
    case 'turn.requested':
      return [
        session({ type: 'turn.begin', turnId: event.turnId }),
        { machine: 'turn', id: event.turnId, create: { turnId: event.turnId }, event: null },
      ];
    case 'turn.started':
      return [turn(event.turnId, { type: 'turn.started' })];
    case 'step.started':
      return [turn(event.turnId, { type: 'step.started', step: event.step })];
    case 'response.started':
      return [turn(event.turnId, { type: 'response.started' })];
    case 'response.completed':
      return [turn(event.turnId, { type: 'response.completed' })];
    case 'tools.started':
      return [turn(event.turnId, { type: 'tools.started', toolCallIds: event.toolCallIds })];
    case 'step.finished':
      return [turn(event.turnId, { type: 'step.finished', step: event.step })];
    case 'turn.interruptRequested':
      return [turn(event.turnId, { type: 'turn.interruptRequested', reason: event.reason })];
    case 'turn.completed':
      return [turn(event.turnId, { type: 'turn.completed' }), session({ type: 'turn.end', turnId: event.turnId })];
    case 'turn.failed':
      return [turn(event.turnId, { type: 'turn.failed', error: event.error }), session({ type: 'turn.end', turnId: event.turnId })];
    case 'turn.interrupted':
      return [turn(event.turnId, { type: 'turn.interrupted', cause: event.cause }), session({ type: 'turn.end', turnId: event.turnId })];
    case 'part.started':
      return [
        turn(event.turnId, { type: 'part.started', partId: event.partId }),
        {
          machine: 'part',
          id: event.partId,
          create: { partId: event.partId, kind: event.kind },
          event:
            event.kind === 'tool'
              ? { type: 'tool.started', toolCallId: event.toolCallId, toolName: event.toolName }
              : { type: 'content.started' },
        },
      ];
    case 'part.delta':
      return [part(event.partId, { type: 'content.delta', text: event.text })];
    case 'part.completed':
      return [part(event.partId, { type: 'content.completed' })];
    case 'tool.inputDelta':
      return [part(event.partId, { type: 'tool.inputDelta', text: event.text })];
    case 'tool.inputReady':
      return [part(event.partId, { type: 'tool.inputReady' })];
    case 'tool.executing':
      return [turn(event.turnId, { type: 'tool.executing', toolCallId: event.toolCallId }), part(event.partId, { type: 'tool.executing' })];
    case 'tool.result':
      return [part(event.partId, { type: 'tool.result' })];
    case 'tool.failed':
      return [part(event.partId, { type: 'tool.failed', error: event.error })];
    case 'part.failed':
      return [part(event.partId, { type: 'part.failed', error: event.error })];
    case 'part.interrupted':
      return [part(event.partId, { type: 'part.interrupted', reason: event.reason })];
    case 'approval.requested':
      return [
        { machine: 'approval', id: event.approvalId, create: { approvalId: event.approvalId }, event: null },
        part(event.partId, { type: 'approval.requested', approvalId: event.approvalId }),
        turn(event.turnId, { type: 'approval.requested', approvalId: event.approvalId }),
      ];
    case 'approval.granted':
      return [
        approval(event.approvalId, { type: 'approval.granted', by: event.by }),
        part(event.partId, { type: 'approval.granted', approvalId: event.approvalId }),
        turn(event.turnId, { type: 'approval.granted', approvalId: event.approvalId }),
      ];
    case 'approval.denied':
      return [
        approval(event.approvalId, { type: 'approval.denied', by: event.by }),
        part(event.partId, { type: 'approval.denied', approvalId: event.approvalId }),
        turn(event.turnId, { type: 'approval.denied', approvalId: event.approvalId }),
      ];
    case 'approval.expired':
      return [
        approval(event.approvalId, { type: 'approval.expired' }),
        part(event.partId, { type: 'approval.expired', approvalId: event.approvalId }),
        turn(event.turnId, { type: 'approval.expired', approvalId: event.approvalId }),
      ];
    // Cancellation only happens while the turn itself is being interrupted,
    // failed or repaired; the part and the turn are settled by their own events.
    case 'approval.cancelled':
      return [approval(event.approvalId, { type: 'approval.cancelled', reason: event.reason })];
    case 'approval.consumed':
      return [approval(event.approvalId, { type: 'approval.consumed' })];
    case 'approval.undelivered':
      return [approval(event.approvalId, { type: 'approval.undelivered', reason: event.reason })];
  }
}

export const actorKey = (delivery: Pick<Delivery, 'machine' | 'id'>): string => `${delivery.machine}:${delivery.id}`;
