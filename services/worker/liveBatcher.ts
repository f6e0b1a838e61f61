import { MSGPACK } from '../../bus/index.ts';
import type { Bus } from '../../domain/index.ts';
import { encodeLiveBatch } from '../../protocol/liveBatch.ts';
import type { LiveDelta } from '../../protocol/liveBatch.ts';

export interface LiveBatchLimits {
  /** A batch goes out at once when it holds this many deltas… */
  maxDeltas: number;
  /** …or this many characters of text, so one message stays far below the server's payload limit. */
  maxChars: number;
}

export const defaultLiveBatchLimits: LiveBatchLimits = { maxDeltas: 256, maxChars: 64 * 1024 };

const headers = { 'content-type': MSGPACK };

/**
 * One turn's live deltas on its thread's live subject, one message per
 * iteration of the event loop. What a provider hands over together (one
 * network read holding many events, or a loop running behind) costs one
 * message instead of one each, and the further the process falls behind, the
 * more each message carries. The batch goes out on `setImmediate`, at the
 * loop's next check phase, never after a timer: batching adds no wait of its own.
 */
export class LiveBatcher {
  private pending: LiveDelta[] = [];
  private chars = 0;
  private immediate: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(
    private readonly bus: Bus,
    private readonly subject: string,
    private readonly limits: LiveBatchLimits = defaultLiveBatchLimits,
  ) {}

  add(delta: LiveDelta): void {
    // The turn is over: nothing may be scheduled any more, and nobody is waiting for its typing.
    if (this.closed) return;
    this.pending.push(delta);
    this.chars += delta.text.length;
    if (this.pending.length >= this.limits.maxDeltas || this.chars >= this.limits.maxChars) this.flush();
    else this.immediate ??= setImmediate(() => this.flush());
  }

  /** The turn ended: what is pending goes out now, and nothing is left scheduled. */
  close(): void {
    this.flush();
    this.closed = true;
  }

  private flush(): void {
    clearImmediate(this.immediate);
    this.immediate = undefined;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.chars = 0;
    try {
      this.bus.publish(this.subject, encodeLiveBatch(batch), { headers });
    } catch {
      // Live deltas are best effort; the durable ones are in the log.
    }
  }
}
