import { assign, setup } from 'xstate';

/**
 * The binding of a thread to a provider session. It is also the thread's turn
 * gate: a turn holds the session from `turn.begin` to `turn.end`, so a second
 * turn cannot begin while one is open; and a revert holds it from
 * `revert.begin` to `revert.end`, so no turn writes files while a revert
 * puts them back.
 */
export type SessionEvent =
  | { type: 'turn.begin'; turnId: string }
  | { type: 'turn.end'; turnId: string }
  | { type: 'session.started'; providerSessionId: string | null }
  | { type: 'session.failed'; reason: string }
  | { type: 'session.stopRequested'; reason: string }
  | { type: 'session.stopped' }
  | { type: 'compaction.started' }
  | { type: 'compaction.ended' }
  | { type: 'revert.begin' }
  | { type: 'revert.end' };

export interface SessionContext {
  threadId: string;
  providerSessionId: string | null;
  failure: string | null;
}

export const sessionEventDescriptions: Record<SessionEvent['type'], string> = {
  'turn.begin': 'A turn claims the session; starts it lazily when there is none, so threads that never send a message cost nothing.',
  'turn.end': 'The turn holding the session settled (completed, failed or interrupted); accepted in every state a turn can hold it in.',
  'session.started': 'The provider confirmed its session exists; only now can the waiting turn run.',
  'session.failed': 'The provider session died or could not start; the next turn may start a fresh one.',
  'session.stopRequested': 'A client asked to release the provider session; recorded before the provider is told.',
  'session.stopped': 'The provider confirmed the session is gone.',
  'compaction.started': 'The running turn’s context no longer fits: older turns are being summarised before it goes on.',
  'compaction.ended': 'The summary is recorded (or the attempt failed): the turn goes on, or settles.',
  'revert.begin': 'A revert of the work tree was recorded; no turn may begin until it ends, so none writes the files it puts back.',
  'revert.end': 'The revert ended, done or not; the provider session is let go too, since it saw turns the revert undid.',
};

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as { threadId: string },
  },
  actions: {
    recordProviderSession: assign({
      providerSessionId: ({ event }) => (event.type === 'session.started' ? event.providerSessionId : null),
      failure: null,
    }),
    recordFailure: assign({
      failure: ({ event }) => (event.type === 'session.failed' ? event.reason : null),
    }),
    forgetProviderSession: assign({ providerSessionId: null }),
    recordAbandonedStart: assign({ failure: 'the turn ended before the session started' }),
    // Past a revert the next turn starts a fresh session, so what failed before is history.
    forgetFailure: assign({ failure: null }),
  },
}).createMachine({
  id: 'session',
  description: 'Provider session binding and the one-turn-at-a-time gate of a thread.',
  context: ({ input }) => ({ threadId: input.threadId, providerSessionId: null, failure: null }),
  initial: 'idle',
  states: {
    idle: {
      description: 'No provider session yet; a thread that never runs a turn stays here.',
      on: { 'turn.begin': 'starting', 'revert.begin': 'reverting' },
    },
    starting: {
      description: 'A turn is waiting while the provider session is created; if the turn ends first, the session never came up (error).',
      on: {
        'session.started': { target: 'running', actions: 'recordProviderSession' },
        'session.failed': { target: 'error', actions: 'recordFailure' },
        'turn.end': { target: 'error', actions: 'recordAbandonedStart' },
        'session.stopRequested': 'stopping',
      },
    },
    ready: {
      description: 'The provider session is alive and no turn holds it.',
      on: {
        'turn.begin': 'running',
        'revert.begin': { target: 'reverting', actions: 'forgetProviderSession' },
        'session.stopRequested': 'stopping',
        'session.failed': { target: 'error', actions: ['recordFailure', 'forgetProviderSession'] },
      },
    },
    reverting: {
      description: 'A revert puts the work tree back; turns wait in the queue until it ends.',
      on: { 'revert.end': 'idle' },
    },
    running: {
      description: 'A turn holds the session; another turn.begin is illegal here.',
      on: {
        'compaction.started': 'compacting',
        'turn.end': 'ready',
        'session.stopRequested': 'stopping',
        'session.failed': { target: 'error', actions: ['recordFailure', 'forgetProviderSession'] },
      },
    },
    compacting: {
      description: 'The turn holding the session waits while older turns are summarised by a model call; it may still settle (a lost worker, an interrupt).',
      on: {
        'compaction.ended': 'running',
        'turn.end': 'ready',
        'session.stopRequested': 'stopping',
        'session.failed': { target: 'error', actions: ['recordFailure', 'forgetProviderSession'] },
      },
    },
    stopping: {
      description: 'Stop recorded, provider not yet confirmed; the turn that held the session may still settle.',
      on: {
        'session.stopped': { target: 'stopped', actions: 'forgetProviderSession' },
        'turn.end': 'stopping',
        'session.failed': { target: 'error', actions: ['recordFailure', 'forgetProviderSession'] },
      },
    },
    stopped: {
      description: 'The provider session is gone on purpose; a new turn starts another.',
      on: {
        'turn.begin': 'starting',
        'turn.end': 'stopped',
        'revert.begin': 'reverting',
      },
    },
    error: {
      description: 'The provider session failed; the thread lives on and the next turn restarts the session.',
      on: {
        'turn.begin': 'starting',
        'turn.end': 'error',
        'session.stopRequested': 'stopped',
        'revert.begin': { target: 'reverting', actions: 'forgetFailure' },
      },
    },
  },
});
