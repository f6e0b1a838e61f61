import type { RootDatabase } from 'lmdb';

interface Queued {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: writes queued in the same turn of the event loop (commands
 * of different threads, arriving together) share one LMDB transaction and
 * one flush to disk. Each write runs in a child transaction of its own, so
 * a write that throws is undone alone and the others still commit; every
 * write is answered only once the whole group is durable.
 */
export class GroupCommit {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(private readonly env: RootDatabase) {}

  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    this.scheduled = false;
    const group = this.queue;
    this.queue = [];
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.env.transactionSync(() => {
        for (const { write } of group) {
          try {
            // Nested in a write transaction, lmdb-js runs this as a child transaction.
            outcomes.push({ ok: true, value: this.env.transactionSync(write) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
      await this.env.flushed;
    } catch (error) {
      // The group's own commit or flush failed: none of it is durable.
      for (const { reject } of group) reject(error);
      return;
    }
    group.forEach(({ resolve, reject }, index) => {
      const outcome = outcomes[index]!;
      if (outcome.ok) resolve(outcome.value);
      else reject(outcome.error);
    });
  }
}
