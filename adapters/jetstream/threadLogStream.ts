import { type ConsumerMessages, DeliverPolicy, type JetStreamClient, type JetStreamManager, JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { type DomainEvent, type Receipt, TurnloomError } from '../../domain/index.ts';
import { JETSTREAM_TIMEOUT_MS } from './casBucket.ts';

/**
 * What one message of a thread's subject holds: one accepted command (all
 * its events, and its receipt, so a retry is answered by whichever engine
 * owns the thread next), a rejection kept for a client's command id, or the
 * mark an engine leaves when it takes the thread, which moves the subject's
 * last sequence so that a stale owner's next append is refused. `by` names
 * the engine that appended it.
 */
export type LogRecord =
  | { kind: 'commit'; by: string; commandId: string; at: number; events: Array<{ threadSeq: number; event: DomainEvent }>; receipt: Receipt }
  | { kind: 'rejection'; by: string; receipt: Extract<Receipt, { outcome: 'rejected' }> }
  | { kind: 'owner'; by: string; at: number };

/** A record as the stream holds it: its place in the stream, and the thread whose subject it is on. */
export interface LogMessage {
  seq: number;
  threadId: string;
  record: LogRecord;
}

export interface ThreadLogOptions {
  /** The stream's name (letters, digits, `-` and `_`). */
  name: string;
  /** The subject of one thread's log, and the wildcard over all of them. */
  subjectOf: (threadId: string) => string;
  subjects: string;
  /** Copies the stream keeps (1 for one nats-server, 3 on a 3-node cluster). */
  replicas: number;
}

/** What an engine needs to know of the stream to trust a cache made from it. */
export interface LogStreamInfo {
  /** When the stream was made: a cache made from another stream of the same name is not this one's. */
  created: string;
  lastSeq: number;
  replicas: number;
  /** The nats-server leading the stream (a cluster's), for `health`. */
  leader: string | null;
}

/** A follower of every thread's log: messages in stream order until stopped. */
export interface LogFollower extends AsyncIterable<LogMessage> {
  stop(): void;
}

/** JetStream's code for an append whose expected last subject sequence is not the subject's: another writer got there first. */
const WRONG_LAST_SEQUENCE = 10071;

/** An append not acknowledged in this long has an unknown outcome (it may still land). */
const APPEND_TIMEOUT_MS = 5_000;

// Records carry plain data only, so no shared-structure tables are needed between engines.
const codec = new Packr({ useRecords: false, moreTypes: false });

/**
 * Threads' logs in one JetStream stream, one subject per thread. An append
 * names the subject's last sequence it was decided on and carries an id for
 * de-duplication: a writer that is not the last one is refused by the stream
 * itself, and a retry of the same append is answered with the first one's
 * place.
 */
export class ThreadLogStream {
  readonly name: string;
  private readonly prefixLength: number;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: ThreadLogOptions,
  ) {
    this.name = options.name;
    this.prefixLength = options.subjectOf('x').length - 1;
  }

  /** Opens the stream, making it if it is not there (file storage, the given replicas, direct gets allowed). */
  static async open(nc: NatsConnection, options: ThreadLogOptions): Promise<ThreadLogStream> {
    try {
      const jsm = await jetstreamManager(nc, { timeout: JETSTREAM_TIMEOUT_MS });
      const log = new ThreadLogStream(jetstream(nc, { timeout: JETSTREAM_TIMEOUT_MS }), jsm, options);
      try {
        await jsm.streams.info(options.name);
      } catch (error) {
        if (!(error instanceof JetStreamApiError) || error.status !== 404) throw error;
        await jsm.streams.add({
          name: options.name,
          subjects: [options.subjects],
          storage: 'file',
          num_replicas: options.replicas,
          allow_direct: true,
          // An append retried within two minutes is recognised and not written twice.
          duplicate_window: 120_000_000_000,
        });
      }
      return log;
    } catch (error) {
      throw unavailable(`opening the log stream ${options.name} (is JetStream enabled on the NATS server?)`, error);
    }
  }

  private threadOf(subject: string): string {
    return subject.slice(this.prefixLength);
  }

  /**
   * Appends `record` to the thread's subject if its last sequence is still
   * `expectedLast` (0: the subject holds nothing yet). Resolves with the new
   * message's place, or the first one's when `msgId` was appended before
   * (`duplicate`). Throws `fenced` when another writer appended meanwhile,
   * and `unavailable` when the outcome is unknown.
   */
  async append(threadId: string, record: LogRecord, expectedLast: number, msgId: string): Promise<{ seq: number; duplicate: boolean }> {
    try {
      const ack = await this.js.publish(this.options.subjectOf(threadId), codec.pack(record), { msgID: msgId, expect: { lastSubjectSequence: expectedLast }, timeout: APPEND_TIMEOUT_MS });
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE) {
        throw new TurnloomError('fenced', `thread ${threadId} was appended to by another engine (expected its last message at ${expectedLast}); this one no longer owns it`, { threadId, expectedLast });
      }
      throw unavailable(`appending to thread ${threadId}`, error);
    }
  }

  /** The stream sequence of the thread's last message; 0 when it has none. */
  async last(threadId: string): Promise<number> {
    try {
      const message = await this.jsm.direct.getMessage(this.name, { last_by_subj: this.options.subjectOf(threadId) });
      return message?.seq ?? 0;
    } catch (error) {
      throw unavailable(`reading thread ${threadId}`, error);
    }
  }

  /** The thread's messages after stream sequence `after`, up to `until` (inclusive), in order. */
  async *read(threadId: string, after: number, until: number): AsyncIterable<LogMessage> {
    if (until <= after) return;
    let consumer;
    try {
      consumer = await this.js.consumers.get(this.name, { filter_subjects: this.options.subjectOf(threadId), deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
    } catch (error) {
      throw unavailable(`reading thread ${threadId}`, error);
    }
    for (;;) {
      const batch = await consumer.fetch({ max_messages: 256, expires: 2_000 });
      let got = 0;
      for await (const message of batch) {
        got += 1;
        if (message.seq > until) return;
        yield { seq: message.seq, threadId, record: codec.unpack(message.data) as LogRecord };
        if (message.seq === until) return;
      }
      if (got === 0) throw new TurnloomError('unavailable', `thread ${threadId}'s log ended before message ${until}`, { threadId, until });
    }
  }

  /** Every thread's messages after stream sequence `after`, in stream order, as they come, until stopped. */
  async follow(after: number): Promise<LogFollower> {
    let messages: ConsumerMessages;
    try {
      const consumer = await this.js.consumers.get(this.name, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
      messages = await consumer.consume({ max_messages: 512 });
    } catch (error) {
      throw unavailable('following the log stream', error);
    }
    const threadOf = (subject: string) => this.threadOf(subject);
    return {
      stop: () => void messages.stop(),
      async *[Symbol.asyncIterator]() {
        for await (const message of messages) yield { seq: message.seq, threadId: threadOf(message.subject), record: codec.unpack(message.data) as LogRecord };
      },
    };
  }

  async info(): Promise<LogStreamInfo> {
    try {
      const info = await this.jsm.streams.info(this.name);
      return { created: info.created, lastSeq: info.state.last_seq, replicas: info.config.num_replicas, leader: info.cluster?.leader ?? null };
    } catch (error) {
      throw unavailable('reading the log stream', error);
    }
  }
}

function unavailable(doing: string, error: unknown): TurnloomError {
  return new TurnloomError('unavailable', `JetStream did not answer ${doing}: ${error instanceof Error ? error.message : String(error)}`, { doing });
}
