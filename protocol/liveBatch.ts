import { MSGPACK, type Subjects, decode, encode } from '../bus/index.ts';
import { type DomainEvent, TurnloomError } from '../domain/index.ts';

/** One delta on the ephemeral live channel: the typing effect, never stored. */
export interface LiveDelta {
  turnId: string;
  step: number;
  partId: string;
  /**
   * `text`, `reasoning`, `toolInput`: what was added to the part since the
   * delta before. `toolOutput`: the latest output of a running tool call, a
   * tail that replaces the one before (the whole output comes with its result).
   */
  kind: 'text' | 'reasoning' | 'toolInput' | 'toolOutput';
  text: string;
}

const kinds: ReadonlySet<unknown> = new Set<LiveDelta['kind']>(['text', 'reasoning', 'toolInput', 'toolOutput']);

/** Whether a decoded value has a delta's shape (a listener must never be handed anything else). */
function isLiveDelta(value: unknown): value is LiveDelta {
  if (typeof value !== 'object' || value === null) return false;
  const delta = value as Record<string, unknown>;
  return typeof delta.turnId === 'string' && typeof delta.partId === 'string' && typeof delta.step === 'number' && typeof delta.text === 'string' && kinds.has(delta.kind);
}

/**
 * The body of a message on `<p>.v1.live.<environment>.<threadId>.<channel>`: always a msgpack array
 * of deltas in the order they were produced (one message carries what one
 * turn produced in one turn of the event loop), never a bare delta.
 */
export function encodeLiveBatch(deltas: readonly LiveDelta[]): Uint8Array {
  return encode(deltas, MSGPACK);
}

/**
 * The deltas of one live message, in order. Undecodable bytes or a body that
 * is not an array is an `invalid_payload` error; an element without a
 * delta's shape is left out, the rest still arrive.
 */
export function decodeLiveBatch(data: Uint8Array): LiveDelta[] {
  const body = decode(data, MSGPACK);
  if (!Array.isArray(body)) throw new TurnloomError('invalid_payload', 'a live message is an array of deltas');
  return body.filter(isLiveDelta);
}

/**
 * The one live subject a thread's deltas are taken from: its open turn's
 * lease's (`subjects.live`), followed through the thread's events. Whoever
 * may publish live deltas at all could name the thread; only the lease
 * holder knows this subject, so nothing else on the thread's live subjects
 * is taken.
 */
export class LeaseLive {
  private subject: string | null;

  constructor(
    private readonly subjects: Subjects,
    private readonly environment: string,
    private readonly threadId: string,
    keyHash: string | null,
  ) {
    this.subject = keyHash === null ? null : subjects.live(environment, threadId, keyHash);
  }

  /** After one of the thread's events: a new lease's subject from `turn.leased`, none once it is lost or its turn ends (a thread has one open turn, so what ends is the current lease's). */
  follow(event: DomainEvent): void {
    if (event.type === 'turn.leased') this.subject = this.subjects.live(this.environment, this.threadId, event.keyHash);
    else if (['turn.leaseLost', 'turn.completed', 'turn.failed', 'turn.interrupted'].includes(event.type)) this.subject = null;
  }

  accepts(subject: string): boolean {
    return subject === this.subject;
  }
}
