/** The error codes every layer speaks; the API returns them verbatim. */
export type ErrorCode =
  | 'invalid_payload'
  | 'not_found'
  | 'illegal_transition'
  | 'forbidden'
  | 'conflict'
  /** Not now: the engine, the bus or the cluster's log is away or changing hands. With `details.retryAfterMs`, the same request may be sent again after that long (`TurnloomError.tryAgain`); a caller with a command id loses nothing doing so. */
  | 'unavailable'
  /** A worker wrote into a turn whose lease it no longer holds: nothing was written. */
  | 'fenced'
  /** Input that would wait on a thread past its limits (queued turns, or steered input no step took yet): nothing was written. */
  | 'queue_full'
  /** The engine runs as many turns as it may and more wait than it lets wait: nothing was written; try again after `details.retryAfterMs`. */
  | 'overloaded'
  | 'internal';

/** How long a caller waits before it sends again a request answered `tryAgain`, by default. */
const TRY_AGAIN_MS = 200;

const errorCodes: readonly string[] = ['invalid_payload', 'not_found', 'illegal_transition', 'forbidden', 'conflict', 'unavailable', 'fenced', 'queue_full', 'overloaded', 'internal'];

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export class TurnloomError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'TurnloomError';
    this.code = code;
    this.details = details;
  }

  /**
   * `unavailable`, and the same request may be sent again after
   * `retryAfterMs` (in `details`): what a cluster answers while a thread
   * changes hands or an engine serves nothing for a moment.
   */
  static tryAgain(message: string, details: Record<string, unknown> = {}, retryAfterMs = TRY_AGAIN_MS): TurnloomError {
    return new TurnloomError('unavailable', message, { ...details, retryAfterMs });
  }

  toJSON(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details };
  }

  /** Rebuilds a stored or received error body as the class it was thrown as; a code we do not know becomes `internal`. */
  static fromJSON(body: ErrorBody): TurnloomError {
    const details = body.details ?? {};
    if (body.code === 'illegal_transition') {
      const { machine, state, event, actorId } = details as { machine: string; state: string; event: string; actorId?: string };
      return new IllegalTransition(machine, state, event, actorId ?? null);
    }
    if (body.code === 'conflict' && typeof details.invariant === 'string') {
      const { invariant, ...rest } = details;
      return new InvariantViolation(invariant as Invariant, body.message, rest, true);
    }
    return new TurnloomError(errorCodes.includes(body.code) ? body.code : 'internal', body.message, details);
  }
}

/** An event the named machine does not accept in its current state. */
export class IllegalTransition extends TurnloomError {
  readonly machine: string;
  readonly state: string;
  readonly event: string;
  /** Which actor refused, when one did (`session`, a turn, part or approval id). */
  readonly actorId: string | null;

  constructor(machine: string, state: string, event: string, actorId: string | null = null) {
    super('illegal_transition', `${machine} in state "${state}" does not accept "${event}"`, actorId === null ? { machine, state, event } : { machine, state, event, actorId });
    this.name = 'IllegalTransition';
    this.machine = machine;
    this.state = state;
    this.event = event;
    this.actorId = actorId;
  }
}

export type Invariant = 'sequence' | 'turn-pairing' | 'step-pairing' | 'turn-scope' | 'tool-result-after-call' | 'part-in-step';

/** A commit that would break the log's structure; it is refused and nothing is written. */
export class InvariantViolation extends TurnloomError {
  readonly invariant: Invariant;

  constructor(invariant: Invariant, message: string, details: Record<string, unknown> = {}, rebuilt = false) {
    super('conflict', rebuilt ? message : `log invariant "${invariant}" violated: ${message}`, { invariant, ...details });
    this.name = 'InvariantViolation';
    this.invariant = invariant;
  }
}
