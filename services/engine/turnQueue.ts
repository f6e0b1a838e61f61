import type { StartOutcome } from '../../protocol/apiResults.ts';
import { type DomainEvent, IllegalTransition, TurnloomError, childId, waitingInput } from '../../domain/index.ts';
import type { Command } from './commands.ts';
import type { QueueLimits, ThreadDraft } from './threadDraft.ts';
export type { QueueLimits } from './threadDraft.ts';
export type { WhileRunning } from './commands.ts';

export const defaultQueueLimits: QueueLimits = { maxTurns: 100, maxBytes: 4 * 1024 * 1024 };

const settles = new Set<DomainEvent['type']>(['turn.completed', 'turn.failed', 'turn.interrupted']);

/** Refuses input that would make what waits exceed the limits, saying what to do instead. */
function requireRoom(draft: ThreadDraft, place: { what: string; turnId?: string; sizes: readonly number[]; later: string }, text: string): void {
  const { maxTurns, maxBytes } = draft.limits.queue;
  const bytes = Buffer.byteLength(text);
  const waitingBytes = place.sizes.reduce((sum, size) => sum + size, 0);
  if (place.sizes.length < maxTurns && waitingBytes + bytes <= maxBytes) return;
  throw new TurnloomError(
    'queue_full',
    `${place.what} holds ${place.sizes.length} inputs waiting (${waitingBytes} bytes); at most ${maxTurns} inputs and ${maxBytes} bytes may wait, and this one takes ${bytes}: ${bytes > maxBytes ? 'send less' : place.later}`,
    { threadId: draft.threadId, ...(place.turnId ? { turnId: place.turnId } : {}), waiting: place.sizes.length, waitingBytes, bytes, maxTurns, maxBytes },
  );
}

function requireNewTurnId(draft: ThreadDraft, turnId: string): void {
  if (draft.view.turns[turnId] || draft.view.queue.some((queued) => queued.turnId === turnId)) {
    throw new TurnloomError('conflict', `turn ${turnId} already exists in thread ${draft.threadId}`, { turnId });
  }
}

/**
 * `turn.start` by its input policy. With no turn open (and none waiting, and
 * no revert under way) the turn is requested; otherwise `queue` puts it at the back of the thread's
 * queue, `interrupt` asks the open turn to stop and puts it first, and
 * `steer` hands the input to the open turn's inbox (queued instead when the
 * open turn is already stopping, since no further step will claim it).
 */
export function startTurn(draft: ThreadDraft, command: Extract<Command, { type: 'turn.start' }>): void {
  const { turnId, input, provider } = command;
  const mode = command.mode ?? null;
  const trace = { ...(command.trace ? { trace: command.trace } : {}), ...(command.agent ? { agent: command.agent } : {}) };
  const openTurnId = draft.view.openTurnId;
  const queue = (place: 'back' | 'front') => {
    requireRoom(draft, { what: `the queue of thread ${draft.threadId}`, sizes: draft.view.queue.map((queued) => queued.bytes), later: 'send it again once queued turns have run' }, input.text);
    draft.emit({ type: 'turn.queued', queuedTurnId: turnId, input, provider, mode, place, ...trace });
  };
  if (openTurnId === null) {
    requireNewTurnId(draft, turnId);
    // A revert holds the thread: the input waits for it, first in line, and runs on the files as the revert left them.
    if (draft.view.queue.length === 0 && draft.view.revert === null) draft.emit({ type: 'turn.requested', turnId, input, provider, mode, ...trace });
    else queue('back');
    return;
  }
  const open = draft.view.turns[openTurnId]!;
  const stopping = open.state.startsWith('interrupting');
  switch (command.whileRunning ?? 'queue') {
    case 'steer':
      if (!stopping) {
        if (open.inbox.some((item) => item.id === turnId)) throw new TurnloomError('conflict', `input ${turnId} was already steered into turn ${openTurnId}`, { turnId: openTurnId, inputId: turnId });
        const sizes = waitingInput(open).map((item) => Buffer.byteLength(item.text));
        requireRoom(draft, { what: `the inbox of turn ${openTurnId}`, turnId: openTurnId, sizes, later: 'send it again once a step took what waits, or queue it' }, input.text);
        draft.emit({ type: 'input.steered', turnId: openTurnId, inputId: turnId, text: input.text });
        return;
      }
      requireNewTurnId(draft, turnId);
      queue('back');
      return;
    case 'interrupt':
      requireNewTurnId(draft, turnId);
      if (!stopping) draft.emit({ type: 'turn.interruptRequested', turnId: openTurnId, reason: `replaced by turn ${turnId}` });
      queue('front');
      return;
    case 'queue':
      requireNewTurnId(draft, turnId);
      queue('back');
  }
}

/** The follow-up of a turn's unclaimed input: `<turn>-steered`, or the first `-steered-<n>` no turn (queued or not) has. */
function unusedTurnId(draft: ThreadDraft, turnId: string): string {
  const taken = (id: string) => draft.view.turns[id] !== undefined || draft.view.queue.some((queued) => queued.turnId === id);
  let id = childId(turnId, 'steered');
  for (let n = 2; taken(id); n++) id = childId(turnId, `steered-${n}`);
  return id;
}

/**
 * Runs after every command, so no path can leave the queue stuck: input
 * steered into a turn that settled before any step claimed it becomes a
 * follow-up turn, first in line (it is never dropped); then, with no turn
 * open, the first queued turn is requested. A session that takes no turn
 * now (it is stopping) refuses, and the queue waits for the command that
 * frees it.
 */
export function followQueue(draft: ThreadDraft): void {
  for (const { event } of [...draft.events]) {
    if (!settles.has(event.type) || !('turnId' in event) || event.turnId === null) continue;
    const turn = draft.view.turns[event.turnId]!;
    const waiting = waitingInput(turn);
    if (waiting.length === 0) continue;
    draft.emit({
      type: 'turn.queued',
      queuedTurnId: unusedTurnId(draft, turn.id),
      input: { text: waiting.map((item) => item.text).join('\n\n') },
      provider: turn.provider,
      mode: turn.mode,
      place: 'front',
      ...(turn.agent ? { agent: turn.agent } : {}),
    });
  }
  const next = draft.view.queue[0];
  if (draft.view.openTurnId !== null || next === undefined || draft.view.archived) return;
  try {
    const queued = draft.queuedTurn(next);
    draft.emit({ type: 'turn.requested', turnId: next.turnId, input: queued.input, provider: next.provider, mode: next.mode, ...(queued.trace ? { trace: queued.trace } : {}), ...(queued.agent ? { agent: queued.agent } : {}) });
  } catch (error) {
    if (!(error instanceof IllegalTransition)) throw error;
  }
}

export function startOutcome(events: readonly DomainEvent[], turnId: string): StartOutcome {
  if (events.some((event) => event.type === 'turn.requested' && event.turnId === turnId)) return { inbox: 'started', turnId };
  const steered = events.find((event) => event.type === 'input.steered' && event.inputId === turnId);
  if (steered?.type === 'input.steered') return { inbox: 'steered', turnId: steered.turnId, inputId: turnId };
  const interrupted = events.find((event) => event.type === 'turn.interruptRequested');
  return { inbox: 'queued', turnId, interrupted: interrupted?.type === 'turn.interruptRequested' ? interrupted.turnId : null };
}
