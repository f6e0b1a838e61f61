import type { DomainEvent, Logger, StoredEvent } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';

/** The lines an operator reads: one per thing that matters in a thread's life, from the events as they are committed. */
function lineOf(engine: Engine, { threadId, at, event }: StoredEvent, log: Logger): void {
  switch (event.type) {
    case 'turn.requested':
      return log.info({ threadId, turnId: event.turnId, provider: event.provider.name }, 'turn requested');
    case 'turn.leased':
      return log.info({ threadId, turnId: event.turnId, workerId: event.workerId, lease: event.token }, 'turn leased');
    case 'turn.leaseLost':
      return log.warn({ threadId, turnId: event.turnId, reason: event.reason }, 'worker lost a turn');
    case 'turn.completed':
    case 'turn.failed':
    case 'turn.interrupted':
      return settled(engine, threadId, at, event, log);
    case 'approval.requested':
      return log.info({ threadId, turnId: event.turnId, approvalId: event.approvalId, tool: event.toolName }, 'approval asked');
    case 'approval.granted':
    case 'approval.denied':
      return log.info({ threadId, approvalId: event.approvalId, decision: event.type === 'approval.granted' ? 'approved' : 'denied', by: event.by }, 'approval answered');
    case 'approval.expired':
      return log.info({ threadId, approvalId: event.approvalId, decision: 'expired' }, 'approval answered');
    case 'checkpoint.revertStarted':
      return log.info({ threadId, revertId: event.revertId, turns: event.turnIds.length, by: event.by }, 'revert started');
    case 'checkpoint.reverted':
      return log.info({ threadId, revertId: event.revertId, files: event.filesChanged }, 'revert done');
    case 'checkpoint.revertFailed':
      return log.warn({ threadId, revertId: event.revertId, reason: event.reason }, 'revert failed');
    default:
      return;
  }
}

function settled(engine: Engine, threadId: string, at: number, event: Extract<DomainEvent, { type: 'turn.completed' | 'turn.failed' | 'turn.interrupted' }>, log: Logger): void {
  const turn = engine.readTurn(threadId, event.turnId);
  const durationMs = turn ? at - turn.requestedAt : undefined;
  if (event.type === 'turn.completed') return log.info({ threadId, turnId: event.turnId, outcome: 'completed', durationMs }, 'turn settled');
  if (event.type === 'turn.failed') return log.warn({ threadId, turnId: event.turnId, outcome: 'failed', error: event.error, durationMs }, 'turn settled');
  const line = { threadId, turnId: event.turnId, outcome: 'interrupted', cause: event.cause, durationMs };
  return event.cause === 'repair' ? log.warn(line, 'turn settled (repaired)') : log.info(line, 'turn settled');
}

/** Logs what an operator wants to see of every committed event; returns how to stop. */
export function logCommittedEvents(engine: Engine, log: Logger): () => void {
  return engine.onCommitted((events) => {
    for (const stored of events) lineOf(engine, stored, log);
  });
}
