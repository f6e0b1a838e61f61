import { AckPolicy, type Consumer, DeliverPolicy, type JetStreamClient, type JetStreamManager, JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type NatsConnection, nanos, nuid } from '@nats-io/transport-node';
import { Packr } from 'msgpackr';
import { type DomainEvent, MAX_SHARDS, type Receipt, TurnloomError, shardOf } from '../../domain/index.ts';
import { JETSTREAM_TIMEOUT_MS } from './casBucket.ts';

/**
 * What one message of a thread's subject holds: one accepted command (all
 * its events, and its receipt, so a retry is answered by whichever engine
 * owns the thread next), or a rejection kept for a client's command id.
 * `by` names the engine that appended it.
 */
export type LogRecord =
  | { kind: 'commit'; by: string; commandId: string; at: number; events: Array<{ threadSeq: number; event: DomainEvent }>; receipt: Receipt }
  | { kind: 'rejection'; by: string; receipt: Extract<Receipt, { outcome: 'rejected' }> };

/** A record as the stream holds it: its place in the stream, and the thread whose subject it is on. */
export interface LogMessage {
  seq: number;
  threadId: string;
  record: LogRecord;
}

export interface ThreadLogOptions {
  /** The stream's name (letters, digits, `-` and `_`). */
  name: string;
  /** The subjects' stem: a thread's log is `<stem>.<shard>.<threadId>`, every one of them `<stem>.>`. */
  stem: string;
  /** Copies the stream keeps (1 for one nats-server, 3 on a 3-node cluster). */
  replicas: number;
  /** How many shards a stream made now has; a stream made before keeps its own. */
  shards: number;
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

/** JetStream's code for an append whose expected last subject sequence is not the subject's: another writer got there first. */
const WRONG_LAST_SEQUENCE = 10071;

/** A read's consumer its engine stopped fetching from (it died mid-read) is deleted by the server after this long. */
const READ_IDLE_MS = 30_000;

/** An append not acknowledged in this long has an unknown outcome (it may still land). */
const APPEND_TIMEOUT_MS = 5_000;

/** How a stream says its layout, in its description (nats-server 2.9 has no stream metadata): read back by every engine that opens it. */
const DESCRIPTION = /^turnloom log: (\d+) shards, subjects <stem>\.<shard>\.<threadId>$/;
const describe = (shards: number) => `turnloom log: ${shards} shards, subjects <stem>.<shard>.<threadId>`;

// Records carry plain data only, so no shared-structure tables are needed between engines.
const codec = new Packr({ useRecords: false, moreTypes: false });

/**
 * Threads' logs in one JetStream stream, one subject per thread under its
 * shard's (`<stem>.<shard>.<threadId>`), so one shard's threads are read
 * with one filter. The shard count is fixed when the stream is made and
 * written in its description. An append names the subject's last sequence
 * it was decided on and carries an id for de-duplication: a writer that is
 * not the last one is refused by the stream itself, and a retry of the same
 * append is answered with the first one's place.
 */
export class ThreadLogStream {
  readonly name: string;

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: ThreadLogOptions,
    /** The stream's own shard count. */
    readonly shards: number,
  ) {
    this.name = options.name;
  }

  /**
   * Opens the stream, making it if it is not there (file storage, the given
   * replicas and shards, direct gets allowed). A stream of the same name
   * that does not say its shards in its description was made by a turnloom
   * before shards (a subject per thread, `<stem>.<threadId>`): refused, with
   * what to do.
   */
  static async open(nc: NatsConnection, options: ThreadLogOptions): Promise<ThreadLogStream> {
    if (!Number.isInteger(options.shards) || options.shards < 1 || options.shards > MAX_SHARDS) {
      throw new TurnloomError('invalid_payload', `a cluster's log has 1 to ${MAX_SHARDS} shards, not ${options.shards}`, { shards: options.shards });
    }
    let description: string | undefined;
    let jsm: JetStreamManager;
    try {
      jsm = await jetstreamManager(nc, { timeout: JETSTREAM_TIMEOUT_MS });
      try {
        description = (await jsm.streams.info(options.name)).config.description ?? '';
      } catch (error) {
        if (!(error instanceof JetStreamApiError) || error.status !== 404) throw error;
        await jsm.streams.add({
          name: options.name,
          description: describe(options.shards),
          subjects: [`${options.stem}.>`],
          storage: 'file',
          num_replicas: options.replicas,
          allow_direct: true,
          // An append retried within two minutes is recognised and not written twice (receipts answer later retries).
          duplicate_window: 120_000_000_000,
        });
      }
    } catch (error) {
      throw unavailable(`opening the log stream ${options.name} (is JetStream enabled on the NATS server?)`, error);
    }
    const shards = description === undefined ? options.shards : Number(DESCRIPTION.exec(description)?.[1] ?? Number.NaN);
    if (!Number.isInteger(shards)) {
      throw new TurnloomError(
        'conflict',
        `the stream ${options.name} was made by a turnloom without shards (a subject per thread): back its threads up with \`nats stream backup\`, delete it (\`nats stream rm ${options.name}\`) and the buckets' streams KV_${options.name.replace(/_LOG$/, '')}_ENGINES and KV_${options.name.replace(/_LOG$/, '')}_OWNERS, and start the engines again with empty data folders`,
        { stream: options.name, description },
      );
    }
    return new ThreadLogStream(jetstream(nc, { timeout: JETSTREAM_TIMEOUT_MS }), jsm, options, shards);
  }

  shardOf(threadId: string): number {
    return shardOf(threadId, this.shards);
  }

  private subjectOf(threadId: string): string {
    return `${this.options.stem}.${this.shardOf(threadId)}.${threadId}`;
  }

  private shardSubjects(shard: number): string {
    return `${this.options.stem}.${shard}.>`;
  }

  private threadOf(subject: string): string {
    return subject.slice(subject.indexOf('.', this.options.stem.length + 1) + 1);
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
      const ack = await this.js.publish(this.subjectOf(threadId), codec.pack(record), { msgID: msgId, expect: { lastSubjectSequence: expectedLast }, timeout: APPEND_TIMEOUT_MS });
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === WRONG_LAST_SEQUENCE) {
        throw new TurnloomError('fenced', `thread ${threadId} was appended to by another engine (expected its last message at ${expectedLast}); this one must read it again`, { threadId, expectedLast });
      }
      throw unavailable(`appending to thread ${threadId}`, error);
    }
  }

  /** The stream sequence of the thread's last message; 0 when it has none. */
  last(threadId: string): Promise<number> {
    return this.lastOn(this.subjectOf(threadId), `reading thread ${threadId}`);
  }

  /** The stream sequence of the shard's last message (of any of its threads); 0 when it has none. */
  lastOfShard(shard: number): Promise<number> {
    return this.lastOn(this.shardSubjects(shard), `reading shard ${shard}`);
  }

  private async lastOn(subject: string, doing: string): Promise<number> {
    try {
      const message = await this.jsm.direct.getMessage(this.name, { last_by_subj: subject });
      return message?.seq ?? 0;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.status === 404) return 0;
      throw unavailable(doing, error);
    }
  }

  /** The thread's messages after stream sequence `after`, up to `until` (inclusive), in order. */
  read(threadId: string, after: number, until: number): AsyncIterable<LogMessage> {
    return this.readOn(this.subjectOf(threadId), after, until, `thread ${threadId}`);
  }

  /** The shard's messages (all its threads') after stream sequence `after`, up to `until` (inclusive), in stream order. */
  readShard(shard: number, after: number, until: number): AsyncIterable<LogMessage> {
    return this.readOn(this.shardSubjects(shard), after, until, `shard ${shard}`);
  }

  /**
   * One consumer of the stream for the read, deleted when the read ends;
   * one left behind (the engine died mid-read) goes by itself after a short
   * idle time, never lingering as an ordered consumer's five minutes would.
   */
  private async *readOn(filter: string, after: number, until: number, what: string): AsyncIterable<LogMessage> {
    if (until <= after) return;
    let consumer: Consumer;
    try {
      const info = await this.jsm.consumers.add(this.name, {
        name: `read_${nuid.next()}`,
        filter_subject: filter,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: after + 1,
        ack_policy: AckPolicy.None,
        max_deliver: 1,
        mem_storage: true,
        num_replicas: 1,
        inactive_threshold: nanos(READ_IDLE_MS),
      });
      consumer = this.js.consumers.getConsumerFromInfo(info);
    } catch (error) {
      throw unavailable(`reading ${what}`, error);
    }
    try {
      for (let next = after + 1; ; ) {
        const batch = await consumer.fetch({ max_messages: 512, expires: 2_000 });
        let got = 0;
        for await (const message of batch) {
          got += 1;
          if (message.seq < next) continue;
          next = message.seq + 1;
          if (message.seq > until) return;
          yield { seq: message.seq, threadId: this.threadOf(message.subject), record: codec.unpack(message.data) as LogRecord };
          if (message.seq === until) return;
        }
        if (got === 0) throw TurnloomError.tryAgain(`the log of ${what} ended before message ${until}`, { until });
      }
    } finally {
      await consumer.delete().catch(() => false);
    }
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
  return TurnloomError.tryAgain(`JetStream did not answer ${doing}: ${error instanceof Error ? error.message : String(error)}`, { doing });
}
