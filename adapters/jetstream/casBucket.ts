import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { TurnloomError } from '../../domain/index.ts';

/** How long a JetStream API call may take: a replicated asset elects a leader first, which takes a moment on a busy cluster. */
export const JETSTREAM_TIMEOUT_MS = 10_000;

/** A key's value and the revision a compare-and-set must name. */
export interface Versioned {
  value: string;
  revision: number;
}

export interface CasBucketOptions {
  name: string;
  /** Keys not written for this long lapse (the bucket's TTL: nats-server 2.9 keeps no TTL per key); 0 for never. */
  ttlMs: number;
  replicas: number;
}

/**
 * A JetStream key-value bucket written only by compare-and-set: a key is
 * created only where there is none, and changed or deleted only by naming
 * the revision it was read at, so two writers never both win. With a TTL,
 * a key its writer stopped renewing lapses by itself.
 */
export class CasBucket {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection, options: CasBucketOptions): Promise<CasBucket> {
    try {
      const kvm = new Kvm(jetstream(nc, { timeout: JETSTREAM_TIMEOUT_MS }));
      return new CasBucket(await kvm.create(options.name, { ...(options.ttlMs > 0 ? { ttl: options.ttlMs } : {}), history: 1, replicas: options.replicas }));
    } catch (error) {
      throw unavailable(`opening the ${options.name} bucket`, error);
    }
  }

  async get(key: string): Promise<Versioned | null> {
    try {
      const entry = await this.kv.get(key);
      return entry && entry.operation === 'PUT' ? { value: entry.string(), revision: entry.revision } : null;
    } catch (error) {
      throw unavailable(`reading ${key}`, error);
    }
  }

  /** Writes `value` where there is no key; the new revision, or `null` when there is one. */
  async create(key: string, value: string): Promise<number | null> {
    try {
      return await this.kv.create(key, value);
    } catch (error) {
      if (lostRace(error)) return null;
      throw unavailable(`writing ${key}`, error);
    }
  }

  /** Writes `value` if the key is still at `revision`; the new revision, or `null` when it moved (or lapsed). */
  async update(key: string, value: string, revision: number): Promise<number | null> {
    try {
      return await this.kv.update(key, value, revision);
    } catch (error) {
      if (lostRace(error)) return null;
      throw unavailable(`writing ${key}`, error);
    }
  }

  /** Deletes the key if it is still at `revision`; `false` when it moved. */
  async delete(key: string, revision: number): Promise<boolean> {
    try {
      await this.kv.delete(key, { previousSeq: revision });
      return true;
    } catch (error) {
      if (lostRace(error)) return false;
      throw unavailable(`deleting ${key}`, error);
    }
  }

  /**
   * Every key as it is now, then every change, as they happen: `value` null
   * for a delete. Ends when `stop` is called or the connection closes.
   * `caughtUp` settles once the keys there were when it began have been
   * delivered (or after `CAUGHT_UP_MS`, should keys lapse meanwhile): one
   * consumer does both, where listing the keys first would make another.
   */
  async watch(onChange: (key: string, entry: Versioned | null) => void): Promise<{ stop(): void; done: Promise<void>; caughtUp: Promise<void> }> {
    let watcher;
    let values: number;
    try {
      ({ values } = await this.kv.status());
      watcher = await this.kv.watch();
    } catch (error) {
      throw unavailable('watching keys', error);
    }
    let markCaughtUp!: () => void;
    const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));
    const timer = setTimeout(markCaughtUp, CAUGHT_UP_MS);
    caughtUp.then(() => clearTimeout(timer), () => undefined);
    if (values === 0) markCaughtUp();
    const done = (async () => {
      try {
        for await (const entry of watcher) {
          onChange(entry.key, entry.operation === 'PUT' ? { value: entry.string(), revision: entry.revision } : null);
          if (entry.isUpdate || entry.delta === 0) markCaughtUp();
        }
      } finally {
        markCaughtUp();
      }
    })();
    return { stop: () => watcher.stop(), done, caughtUp };
  }
}

/** The longest `watch` waits for the keys there were to be delivered before it counts itself caught up. */
const CAUGHT_UP_MS = 5_000;

/** The write named a revision that is not the key's (or created a key that exists): another writer was first. */
const lostRace = (error: unknown): boolean => error instanceof Error && /wrong last sequence|key exists/i.test(error.message);

function unavailable(doing: string, error: unknown): TurnloomError {
  return TurnloomError.tryAgain(`JetStream did not answer ${doing}: ${error instanceof Error ? error.message : String(error)}`, { doing });
}
