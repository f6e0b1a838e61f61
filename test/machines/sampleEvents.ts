import type { ApprovalEvent, LifecycleMachineName, PartEvent, SessionEvent, TurnEvent } from '../../machines/index.ts';

type Samples<E extends { type: string }> = { [T in E['type']]: Extract<E, { type: T }> };

/** One event of every type per machine; the type makes a missing one a compile error. */
export const sampleEvents: { [N in LifecycleMachineName]: Samples<{ session: SessionEvent; turn: TurnEvent; part: PartEvent; approval: ApprovalEvent }[N]> } = {
  session: {
    'turn.begin': { type: 'turn.begin', turnId: 't1' },
    'turn.end': { type: 'turn.end', turnId: 't1' },
    'session.started': { type: 'session.started', providerSessionId: 'ps1' },
    'session.failed': { type: 'session.failed', reason: 'boom' },
    'session.stopRequested': { type: 'session.stopRequested', reason: 'user' },
    'session.stopped': { type: 'session.stopped' },
    'compaction.started': { type: 'compaction.started' },
    'compaction.ended': { type: 'compaction.ended' },
    'revert.begin': { type: 'revert.begin' },
    'revert.end': { type: 'revert.end' },
  },
  turn: {
    'turn.started': { type: 'turn.started' },
    'input.steered': { type: 'input.steered' },
    'input.claimed': { type: 'input.claimed', count: 1 },
    'context.replaced': { type: 'context.replaced' },
    'request.context': { type: 'request.context' },
    'request.header': { type: 'request.header' },
    'step.started': { type: 'step.started', step: 1 },
    'response.started': { type: 'response.started' },
    'part.started': { type: 'part.started', partId: 'p1' },
    'response.completed': { type: 'response.completed' },
    'tools.started': { type: 'tools.started', toolCallIds: ['c1'] },
    'tool.executing': { type: 'tool.executing', toolCallId: 'c1' },
    'approval.requested': { type: 'approval.requested', approvalId: 'a1' },
    'approval.granted': { type: 'approval.granted', approvalId: 'a1' },
    'approval.denied': { type: 'approval.denied', approvalId: 'a1' },
    'approval.expired': { type: 'approval.expired', approvalId: 'a1' },
    'step.finished': { type: 'step.finished', step: 1 },
    'turn.completed': { type: 'turn.completed' },
    'turn.failed': { type: 'turn.failed', error: 'boom' },
    'turn.interruptRequested': { type: 'turn.interruptRequested', reason: 'user' },
    'turn.interrupted': { type: 'turn.interrupted', cause: 'provider' },
  },
  part: {
    'content.started': { type: 'content.started' },
    'content.delta': { type: 'content.delta', text: 'hi' },
    'content.completed': { type: 'content.completed' },
    'tool.started': { type: 'tool.started', toolCallId: 'c1', toolName: 'bash' },
    'tool.inputDelta': { type: 'tool.inputDelta', text: '{"cmd"' },
    'tool.inputReady': { type: 'tool.inputReady' },
    'approval.requested': { type: 'approval.requested', approvalId: 'a1' },
    'approval.granted': { type: 'approval.granted', approvalId: 'a1' },
    'approval.denied': { type: 'approval.denied', approvalId: 'a1' },
    'approval.expired': { type: 'approval.expired', approvalId: 'a1' },
    'tool.executing': { type: 'tool.executing' },
    'tool.result': { type: 'tool.result' },
    'tool.failed': { type: 'tool.failed', error: 'exit 1' },
    'part.failed': { type: 'part.failed', error: 'stream broke' },
    'part.interrupted': { type: 'part.interrupted', reason: 'user' },
  },
  approval: {
    'approval.granted': { type: 'approval.granted', by: 'alice' },
    'approval.denied': { type: 'approval.denied', by: 'alice' },
    'approval.cancelled': { type: 'approval.cancelled', reason: 'turn interrupted' },
    'approval.expired': { type: 'approval.expired' },
    'approval.consumed': { type: 'approval.consumed' },
    'approval.undelivered': { type: 'approval.undelivered', reason: 'turn ended' },
  },
};

export const sampleInputs = {
  session: { threadId: 'th1' },
  turn: { turnId: 't1' },
  part: { partId: 'p1', kind: 'tool' },
  approval: { approvalId: 'a1' },
} as const;
