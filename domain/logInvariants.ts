import type { DomainEvent } from './domainEvents.ts';
import { type Invariant, InvariantViolation } from './errors.ts';
import type { LogCursor } from './logCursor.ts';


/** Events that settle a part: after one of these the part takes no more events. */
const settlesPart = new Set<DomainEvent['type']>([
  'part.completed',
  'tool.result',
  'tool.failed',
  'part.failed',
  'part.interrupted',
  'approval.denied',
  'approval.expired',
]);

function toolCallOf(event: DomainEvent): string | null {
  switch (event.type) {
    case 'tool.inputReady':
    case 'tool.executing':
    case 'tool.result':
    case 'tool.failed':
    case 'approval.requested':
    case 'task.delegated':
      return event.toolCallId;
    case 'part.interrupted':
      return event.tool?.toolCallId ?? null;
    default:
      return null;
  }
}

/**
 * Checks one event against the log's structural rules and returns the cursor
 * after it. These rules hold whatever the machines say; they are the second,
 * independent line of defence (the request sent to a model is rebuilt from
 * this log, so it must never be malformed).
 */
export function advanceCursor(cursor: LogCursor, threadSeq: number, event: DomainEvent): LogCursor {
  const fail = (invariant: Invariant, message: string): never => {
    throw new InvariantViolation(invariant, message, { threadSeq, event: event.type });
  };
  if (threadSeq !== cursor.threadSeq + 1) {
    fail('sequence', `thread sequence ${threadSeq} does not follow ${cursor.threadSeq}`);
  }
  const next: LogCursor = { ...cursor, threadSeq };

  if ('turnId' in event && event.turnId !== null) {
    if (event.type === 'turn.requested') {
      if (cursor.openTurnId !== null) fail('turn-pairing', `turn ${event.turnId} opened while ${cursor.openTurnId} is open`);
      return { ...next, openTurnId: event.turnId, openStep: null, lastStep: 0, openParts: [], stepToolCalls: [] };
    }
    if (event.turnId !== cursor.openTurnId) {
      fail('turn-scope', `event of turn ${event.turnId} while ${cursor.openTurnId ?? 'no turn'} is open`);
    }
  }

  switch (event.type) {
    case 'step.started':
      if (cursor.openStep !== null) fail('step-pairing', `step ${event.step} started while step ${cursor.openStep} is open`);
      if (event.step !== cursor.lastStep + 1) fail('step-pairing', `step ${event.step} does not follow step ${cursor.lastStep}`);
      return { ...next, openStep: event.step, lastStep: event.step, openParts: [], stepToolCalls: [] };
    case 'step.finished':
      if (cursor.openStep !== event.step) fail('step-pairing', `step ${event.step} finished but ${cursor.openStep ?? 'no step'} is open`);
      if (cursor.openParts.length > 0) fail('step-pairing', `step ${event.step} finished with open parts ${cursor.openParts.join(', ')}`);
      return { ...next, openStep: null, openParts: [], stepToolCalls: [] };
    case 'turn.completed':
    case 'turn.failed':
    case 'turn.interrupted':
      if (cursor.openStep !== null) fail('step-pairing', `turn ${event.turnId} closed while step ${cursor.openStep} is open`);
      return { ...next, openTurnId: null, openStep: null, openParts: [], stepToolCalls: [] };
    case 'response.started':
    case 'response.completed':
    case 'tools.started':
      if (cursor.openStep === null || event.step !== cursor.openStep) fail('step-pairing', `${event.type} for step ${event.step} but ${cursor.openStep ?? 'no step'} is open`);
      return next;
    case 'part.started':
      if (cursor.openStep === null || event.step !== cursor.openStep) {
        fail('part-in-step', `part ${event.partId} started in step ${event.step} but ${cursor.openStep ?? 'no step'} is open`);
      }
      return {
        ...next,
        openParts: [...cursor.openParts, event.partId],
        stepToolCalls: event.kind === 'tool' ? [...cursor.stepToolCalls, event.toolCallId] : cursor.stepToolCalls,
      };
    default:
      break;
  }

  const toolCallId = toolCallOf(event);
  if (toolCallId !== null && !cursor.stepToolCalls.includes(toolCallId)) {
    fail('tool-result-after-call', `${event.type} for tool call ${toolCallId}, which was not made in the open step`);
  }
  if ('partId' in event) {
    if (!cursor.openParts.includes(event.partId)) {
      fail('part-in-step', `${event.type} for part ${event.partId}, which is not open in the open step`);
    }
    if (settlesPart.has(event.type)) return { ...next, openParts: cursor.openParts.filter((id) => id !== event.partId) };
  }
  return next;
}
