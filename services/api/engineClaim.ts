import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Bus, type BusSubscription, TurnloomError } from '../../domain/index.ts';
import { JSON_TYPE, type Subjects, decode, encode } from '../../bus/index.ts';

/** What an engine says about itself on `<p>.v1.engine.claim`. */
interface ClaimNotice {
  id: string;
  state: 'checking' | 'serving';
  pid: number;
  host: string;
  /** An engine of a cluster shares the prefix with the cluster's other engines, and with nothing else. */
  mode?: 'single' | 'cluster';
}

/** Another engine serves this prefix: two engines would split the API between two data folders. */
export class PrefixTaken extends TurnloomError {
  constructor(prefix: string, rival: ClaimNotice) {
    super(
      'conflict',
      rival.mode === 'cluster'
        ? `engines of a turnloom cluster (one is pid ${rival.pid} on ${rival.host}) already serve the subject prefix "${prefix}" on this bus; join them as one of them, or give this engine another prefix`
        : `another turnloom engine (pid ${rival.pid} on ${rival.host}) already serves the subject prefix "${prefix}" on this bus; stop it, or give this one another prefix`,
      { prefix, rival },
    );
    this.name = 'PrefixTaken';
  }
}

/**
 * Makes sure one engine serves a prefix. Each engine listens on the claim
 * subject before it asks, then asks who else is there and listens for a
 * window: an engine already serving wins; two engines checking at the same
 * moment both hear each other (whichever asked first was already listening
 * when the other asked) and the smaller id wins on both sides. The winner
 * keeps answering, so a later engine hears it is serving. Engines of one
 * cluster share the prefix: they do not count each other as rivals, but a
 * single engine and a cluster engine do.
 */
export class EngineClaim {
  private readonly self: ClaimNotice;
  private subscription: BusSubscription | undefined;
  private beaten: ClaimNotice | null = null;
  private claiming: Promise<void> | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    mode: 'single' | 'cluster' = 'single',
    /** How long to listen for answers over a network bus (an in-process one answers by the next flush). */
    private readonly windowMs = 250,
  ) {
    this.self = { id: randomUUID(), state: 'checking', pid: process.pid, host: hostname(), mode };
  }

  private outranks(rival: ClaimNotice): boolean {
    return rival.state === 'serving' || rival.id < this.self.id;
  }

  private hear(rival: ClaimNotice): void {
    if (rival.id === this.self.id || this.self.state === 'serving') return;
    if (rival.mode === 'cluster' && this.self.mode === 'cluster') return;
    if (this.outranks(rival)) this.beaten ??= rival;
  }

  /**
   * Resolves once this engine owns the prefix; throws `PrefixTaken` when
   * another one does. Asked once: later calls get the same answer, so a
   * start can begin the claim early and await it where it serves.
   */
  claim(): Promise<void> {
    this.claiming ??= this.ask();
    return this.claiming;
  }

  private async ask(): Promise<void> {
    const subject = this.subjects.engineClaim;
    this.subscription = this.bus.subscribe(subject, (message) => {
      const rival = parseNotice(message.data);
      if (!rival) return;
      this.hear(rival);
      if (message.reply && rival.id !== this.self.id) this.bus.publish(message.reply, encode(this.self, JSON_TYPE));
    });
    const inbox = `_INBOX.${randomUUID().replaceAll('-', '')}`;
    const answers = this.bus.subscribe(inbox, (message) => {
      const rival = parseNotice(message.data);
      if (rival) this.hear(rival);
    });
    try {
      await this.bus.flush();
      this.bus.publish(subject, encode(this.self, JSON_TYPE), { reply: inbox });
      await this.bus.flush();
      if (!this.bus.local) {
        await sleep(this.windowMs);
        // A loop kept busy through the window (a start loading its modules meanwhile) may not have read an answer that
        // came in time: a round trip to the server delivers whatever it sent before, so no rival is missed for that.
        await this.bus.flush();
      }
    } finally {
      answers.unsubscribe();
    }
    if (this.beaten) {
      this.release();
      throw new PrefixTaken(this.subjects.prefix, this.beaten);
    }
    this.self.state = 'serving';
  }

  release(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }
}

function parseNotice(data: Uint8Array): ClaimNotice | null {
  try {
    const notice = decode(data, JSON_TYPE) as Partial<ClaimNotice>;
    if (typeof notice.id !== 'string' || (notice.state !== 'checking' && notice.state !== 'serving')) return null;
    return { id: notice.id, state: notice.state, pid: Number(notice.pid), host: String(notice.host), mode: notice.mode === 'cluster' ? 'cluster' : 'single' };
  } catch {
    return null;
  }
}
