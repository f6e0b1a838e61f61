import { type ConnectionOptions, InvalidArgumentError, type MsgHdrs, type NatsConnection, RequestError, TimeoutError, connect, createInbox } from '@nats-io/transport-node';
import { type Bus, BusError, type BusMessage, type BusStatus, type BusSubscription, type Logger, type PublishOptions, type RequestOptions, type SubscribeOptions, errorFields, silentLogger } from '../domain/index.ts';
import { HeaderCache } from './headerCache.ts';
import { assertSubject } from './subjectRules.ts';
import { setTimeout as delay } from 'node:timers/promises';

/** How long a flush waits for a lost connection to come back, and how often it tries. */
const FLUSH_PATIENCE_MS = 15_000;
const FLUSH_RETRY_MS = 200;

function fromNatsHeaders(headers: MsgHdrs | undefined): Record<string, string> {
  if (!headers) return {};
  return Object.fromEntries(headers.keys().map((key) => [key.toLowerCase(), headers.get(key)]));
}

/** The bus over a real NATS connection; reconnects forever unless told otherwise. */
export class NatsBus implements Bus {
  readonly local = false;
  private readonly nc: NatsConnection;
  private state: BusStatus = 'connected';
  private readonly statusListeners = new Set<(status: BusStatus) => void>();
  private readonly errorListeners = new Set<(error: BusError) => void>();

  private readonly inboxPrefix: string;
  private readonly headers = new HeaderCache();

  private constructor(
    nc: NatsConnection,
    inboxPrefix: string,
    private readonly log: Logger,
  ) {
    this.nc = nc;
    this.inboxPrefix = inboxPrefix;
    this.watchStatus().catch((error: unknown) => this.log.error(errorFields(error), 'bus: the status watcher stopped'));
  }

  /**
   * Reconnects forever once connected; the first connect is tried once and
   * fails at once (nats.js does that unless `waitOnFirstConnect` is set).
   * `log`: where a subscriber's handler that throws is reported.
   */
  static async connect(options: ConnectionOptions, log: Logger = silentLogger): Promise<NatsBus> {
    // No async stack trace per request: nats.js would otherwise build two Error objects for every request/reply.
    const nc = await connect({ maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true, ...options });
    return new NatsBus(nc, options.inboxPrefix ?? '_INBOX', log);
  }

  inbox(): string {
    return createInbox(this.inboxPrefix);
  }

  /** The NATS connection itself, for what rides on it beyond subjects (a cluster's JetStream log and buckets). */
  get connection(): NatsConnection {
    return this.nc;
  }

  /** The largest message the server accepts (its `max_payload`, from the INFO it sent on connect). */
  get maxPayload(): number | undefined {
    return this.nc.info?.max_payload;
  }

  private setState(state: BusStatus): void {
    if (state === this.state) return;
    this.state = state;
    for (const listener of this.statusListeners) listener(state);
  }

  private async watchStatus(): Promise<void> {
    void this.nc.closed().then(() => this.setState('closed'));
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') this.setState('disconnected');
      else if (status.type === 'reconnecting') this.setState('reconnecting');
      else if (status.type === 'reconnect') this.setState('connected');
      else if (status.type === 'error') {
        const error = new BusError('permission', status.error.message, 'subject' in status.error ? String(status.error.subject) : '');
        for (const listener of this.errorListeners) listener(error);
      }
    }
  }

  private assertOpen(subject: string): void {
    if (this.nc.isClosed() || this.nc.isDraining()) throw new BusError('closed', 'connection is closed', subject);
  }

  /** nats.js refuses a message over the server's max_payload before sending it; said as such, or a caller would retry it forever. */
  private tooLarge(error: unknown, subject: string, size: number): BusError | null {
    if (!(error instanceof InvalidArgumentError && error.message.includes('max_payload'))) return null;
    return new BusError('too_large', `a message of ${size} bytes to ${subject} is over the server's limit of ${this.maxPayload ?? '?'} bytes (max_payload)`, subject);
  }

  publish(subject: string, data: Uint8Array, options: PublishOptions = {}): void {
    this.assertOpen(subject);
    assertSubject(subject, false);
    const headers = this.headers.headersFor(options.headers);
    try {
      this.nc.publish(subject, data, { ...(headers ? { headers } : {}), ...(options.reply ? { reply: options.reply } : {}) });
    } catch (error) {
      throw this.tooLarge(error, subject, data.length) ?? error;
    }
  }

  subscribe(subject: string, handler: (message: BusMessage) => void, options: SubscribeOptions = {}): BusSubscription {
    this.assertOpen(subject);
    assertSubject(subject, true);
    const subscription = this.nc.subscribe(subject, {
      ...(options.queue ? { queue: options.queue } : {}),
      callback: (error, msg) => {
        if (error) {
          for (const listener of this.errorListeners) listener(new BusError('permission', error.message, subject));
          return;
        }
        try {
          handler({ subject: msg.subject, data: msg.data, headers: fromNatsHeaders(msg.headers), reply: msg.reply || undefined });
        } catch (thrown) {
          this.log.error({ ...errorFields(thrown), subject }, 'bus: a subscriber threw');
        }
      },
    });
    return { subject, unsubscribe: () => subscription.unsubscribe() };
  }

  async request(subject: string, data: Uint8Array, options: RequestOptions = {}): Promise<BusMessage> {
    this.assertOpen(subject);
    assertSubject(subject, false);
    const headers = this.headers.headersFor(options.headers);
    try {
      const msg = await this.nc.request(subject, data, { timeout: options.timeoutMs ?? 5_000, ...(headers ? { headers } : {}) });
      return { subject: msg.subject, data: msg.data, headers: fromNatsHeaders(msg.headers), reply: undefined };
    } catch (error) {
      if (error instanceof RequestError && error.isNoResponders()) throw new BusError('no_responders', `no responders on ${subject}`, subject);
      const tooLarge = this.tooLarge(error, subject, data.length);
      if (tooLarge) throw tooLarge;
      if (error instanceof TimeoutError || (error instanceof RequestError && error.cause instanceof TimeoutError)) {
        throw new BusError('timeout', `request to ${subject} timed out`, subject);
      }
      throw new BusError('closed', (error as Error).message, subject);
    }
  }

  /**
   * Resolves once the server has seen everything sent so far. A flush cut
   * off by a lost connection is tried again once the client has reconnected
   * (it then sends its subscriptions again): with several servers, one going
   * away must not fail a start.
   */
  async flush(): Promise<void> {
    const until = Date.now() + FLUSH_PATIENCE_MS;
    for (;;) {
      try {
        await this.nc.flush();
        return;
      } catch (error) {
        if (this.nc.isClosed() || Date.now() > until) throw new BusError('closed', `could not flush: ${(error as Error).message}`, '');
        await delay(FLUSH_RETRY_MS);
      }
    }
  }

  async drain(): Promise<void> {
    if (!this.nc.isClosed() && !this.nc.isDraining()) await this.nc.drain();
  }

  async close(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.close();
    this.setState('closed');
  }

  status(): BusStatus {
    return this.state;
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  onError(listener: (error: BusError) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }
}
