import { TurnloomError } from './errors.ts';

/** A message as every transport delivers it. Header names are lower case. */
export interface BusMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
  /** Where a reply goes, for request/reply. */
  readonly reply: string | undefined;
}

export interface PublishOptions {
  headers?: Record<string, string>;
  reply?: string;
}

export interface SubscribeOptions {
  /** Subscribers sharing a queue name split the messages: each goes to one of them. */
  queue?: string;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface BusSubscription {
  readonly subject: string;
  unsubscribe(): void;
}

export type BusStatus = 'connected' | 'disconnected' | 'reconnecting' | 'closed';

/**
 * One connection to a subject space. The NATS transport and the in-process
 * one give the same semantics: `*` matches one token, `>` one or more at the
 * end; queue groups; request/reply with a timeout and an immediate "no
 * responders"; per-publisher ordering; drain then close.
 */
export interface Bus {
  /** Every subscriber lives in this process, so once `flush()` resolves everything published so far was handled. */
  readonly local: boolean;
  /** A fresh inbox subject under this connection's inbox prefix: where messages meant for this connection alone go. */
  inbox(): string;
  publish(subject: string, data: Uint8Array, options?: PublishOptions): void;
  subscribe(subject: string, handler: (message: BusMessage) => void, options?: SubscribeOptions): BusSubscription;
  request(subject: string, data: Uint8Array, options?: RequestOptions): Promise<BusMessage>;
  /** Resolves once everything published so far reached the server (or the in-process hub). */
  flush(): Promise<void>;
  /** Stops subscriptions after delivering what is pending, then closes. */
  drain(): Promise<void>;
  close(): Promise<void>;
  status(): BusStatus;
  /** Connection status changes; returns an unsubscribe function. */
  onStatus(listener: (status: BusStatus) => void): () => void;
  /** Asynchronous errors the server reports (permission violations). */
  onError(listener: (error: BusError) => void): () => void;
}

/** `too_large`: a message over the server's largest (its `max_payload`), which no retry will make smaller. */
export type BusErrorKind = 'timeout' | 'no_responders' | 'closed' | 'permission' | 'invalid_subject' | 'too_large';

/** A transport failure; `unavailable` for the API (try again), except a bad subject or a message too large, which are the caller's `invalid_payload`. */
export class BusError extends TurnloomError {
  readonly kind: BusErrorKind;

  constructor(kind: BusErrorKind, message: string, subject: string) {
    super(kind === 'invalid_subject' || kind === 'too_large' ? 'invalid_payload' : 'unavailable', message, { kind, subject });
    this.name = 'BusError';
    this.kind = kind;
  }
}
