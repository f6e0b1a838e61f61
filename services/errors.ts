/** The error codes every layer speaks; the API returns them verbatim. */
export type ErrorCode =
  | 'invalid_payload'
  | 'not_found'
  | 'illegal_transition'
  | 'forbidden'
  | 'conflict'
  | 'unavailable'
  | 'internal';

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

  toJSON(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details };
  }

  /** Rebuilds a stored or received error body; unknown input becomes `internal`. */
  static fromJSON(body: ErrorBody): TurnloomError {
    if (body.code === 'illegal_transition') {
      const { machine, state, event } = body.details as { machine: string; state: string; event: string };
      return new IllegalTransition(machine, state, event);
    }
    return new TurnloomError(body.code, body.message, body.details);
  }
}

/** An event the named machine does not accept in its current state. */
export class IllegalTransition extends TurnloomError {
  readonly machine: string;
  readonly state: string;
  readonly event: string;

  constructor(machine: string, state: string, event: string) {
    super('illegal_transition', `${machine} in state "${state}" does not accept "${event}"`, { machine, state, event });
    this.name = 'IllegalTransition';
    this.machine = machine;
    this.state = state;
    this.event = event;
  }
}
