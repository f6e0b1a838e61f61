import { randomUUID } from 'node:crypto';
import { type Bus, BusError, type BusMessage, type BusStatus, type BusSubscription, type Logger, type PublishOptions, type RequestOptions, type SubscribeOptions, errorFields, silentLogger } from '../domain/index.ts';
import { assertSubject, isPattern, tokensMatch } from './subjectRules.ts';

interface HubSubscription {
  subject: string;
  /** When it subscribed, among the hub's: what a message matching several is delivered to them in. */
  place: number;
  queue: string | undefined;
  handler: (message: BusMessage) => void;
  active: boolean;
  owner: InProcessBus;
}

const lowerKeys = (headers: Record<string, string> = {}) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));

/**
 * The shared subject space of one process. `connect()` gives a `Bus`, the way
 * each NATS connection is one: several connections see each other's messages.
 */
export class InProcessHub {
  /**
   * Subscriptions to one subject, by that subject (most are: inboxes, a
   * thread's events), so a message finds its own without being matched
   * against every other; those with wildcards are matched one by one.
   */
  private readonly named = new Map<string, Set<HubSubscription>>();
  /** Wildcard subscriptions, with their subjects split once. */
  private readonly patterns = new Map<HubSubscription, string[]>();
  private subscribed = 0;
  private readonly roundRobin = new Map<string, number>();

  /** `log`: where a subscriber's handler that throws is reported (default: nowhere). */
  constructor(readonly log: Logger = silentLogger) {}

  connect(): Bus {
    return new InProcessBus(this);
  }

  /** @internal */
  add(subject: string, queue: string | undefined, handler: (message: BusMessage) => void, owner: InProcessBus): HubSubscription {
    const subscription: HubSubscription = { subject, place: this.subscribed++, queue, handler, active: true, owner };
    if (isPattern(subject)) this.patterns.set(subscription, subject.split('.'));
    else {
      const same = this.named.get(subject);
      if (same) same.add(subscription);
      else this.named.set(subject, new Set([subscription]));
    }
    return subscription;
  }

  /** @internal */
  remove(subscription: HubSubscription): void {
    subscription.active = false;
    if (!this.patterns.delete(subscription)) {
      const same = this.named.get(subscription.subject);
      same?.delete(subscription);
      if (same?.size === 0) this.named.delete(subscription.subject);
    }
  }

  /** @internal Delivers asynchronously, in publish order per subscription; returns how many receive it. */
  deliver(message: BusMessage): number {
    const named = this.named.get(message.subject);
    const matched = named ? [...named] : [];
    const tokens = this.patterns.size > 0 ? message.subject.split('.') : [];
    for (const [subscription, pattern] of this.patterns) if (tokensMatch(pattern, tokens)) matched.push(subscription);
    if (named && matched.length > named.size) matched.sort((a, b) => a.place - b.place);
    const plain: HubSubscription[] = [];
    const groups = new Map<string, HubSubscription[]>();
    for (const subscription of matched) {
      if (subscription.queue === undefined) plain.push(subscription);
      else groups.set(subscription.queue, [...(groups.get(subscription.queue) ?? []), subscription]);
    }
    const targets = [...plain];
    for (const [queue, members] of groups) {
      const turn = this.roundRobin.get(queue) ?? 0;
      this.roundRobin.set(queue, turn + 1);
      targets.push(members[turn % members.length]!);
    }
    for (const target of targets) target.owner.enqueue(target, message);
    return targets.length;
  }
}

export class InProcessBus implements Bus {
  readonly local = true;
  private readonly hub: InProcessHub;
  private readonly mine = new Set<HubSubscription>();
  private state: BusStatus = 'connected';
  private readonly statusListeners = new Set<(status: BusStatus) => void>();

  constructor(hub: InProcessHub) {
    this.hub = hub;
  }

  /** @internal */
  enqueue(subscription: HubSubscription, message: BusMessage): void {
    // A microtask per message: never inside publish, always in publish order.
    queueMicrotask(() => {
      try {
        if (subscription.active) subscription.handler(message);
      } catch (error) {
        this.hub.log.error({ ...errorFields(error), subject: subscription.subject }, 'bus: a subscriber threw');
      }
    });
  }

  private assertOpen(subject: string): void {
    if (this.state === 'closed') throw new BusError('closed', 'connection is closed', subject);
  }

  publish(subject: string, data: Uint8Array, options: PublishOptions = {}): void {
    this.assertOpen(subject);
    assertSubject(subject, false);
    this.hub.deliver({ subject, data, headers: lowerKeys(options.headers), reply: options.reply });
  }

  subscribe(subject: string, handler: (message: BusMessage) => void, options: SubscribeOptions = {}): BusSubscription {
    this.assertOpen(subject);
    assertSubject(subject, true);
    const subscription = this.hub.add(subject, options.queue, handler, this);
    this.mine.add(subscription);
    return {
      subject,
      unsubscribe: () => {
        this.hub.remove(subscription);
        this.mine.delete(subscription);
      },
    };
  }

  inbox(): string {
    return `_INBOX.${randomUUID().replaceAll('-', '')}`;
  }

  request(subject: string, data: Uint8Array, options: RequestOptions = {}): Promise<BusMessage> {
    this.assertOpen(subject);
    assertSubject(subject, false);
    const inbox = this.inbox();
    return new Promise<BusMessage>((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        reply.unsubscribe();
        outcome();
      };
      const reply = this.subscribe(inbox, (message) => finish(() => resolve(message)));
      const timer = setTimeout(() => finish(() => reject(new BusError('timeout', `request to ${subject} timed out`, subject))), options.timeoutMs ?? 5_000);
      const receivers = this.hub.deliver({ subject, data, headers: lowerKeys(options.headers), reply: inbox });
      if (receivers === 0) finish(() => reject(new BusError('no_responders', `no responders on ${subject}`, subject)));
    });
  }

  /** Deliveries are microtasks, so by the next macrotask everything published so far has been handled. */
  async flush(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async drain(): Promise<void> {
    await this.flush();
    await this.close();
  }

  async close(): Promise<void> {
    if (this.state === 'closed') return;
    for (const subscription of this.mine) this.hub.remove(subscription);
    this.mine.clear();
    this.state = 'closed';
    for (const listener of this.statusListeners) listener('closed');
  }

  status(): BusStatus {
    return this.state;
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  onError(): () => void {
    // Nothing enforces permissions in-process, so there are no asynchronous errors to report.
    return () => undefined;
  }
}
