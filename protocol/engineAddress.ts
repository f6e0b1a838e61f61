/**
 * What a caller of a cluster (an API client, a worker) keeps to reach the
 * engine that owns a thread without a detour, and to get past one that
 * stopped answering: every answer of a cluster's engine names it in a
 * header; the caller addresses that engine next time for the same thread
 * (`<p>.v1.api.<engineId>.<method>`, `<p>.v1.worker.<env>.<engineId>.<method>`),
 * and a request that meets silence is asked again after a short wait,
 * through the subjects every engine shares, where the bus picks another
 * engine. A single engine sends no such header, so its callers never
 * address it directly.
 */

/** The header naming the engine of a cluster that answered. */
export const ENGINE_HEADER = 'turnloom-engine';

/** How many threads' engines a caller remembers, the least recently used forgotten first. */
const REMEMBERED = 10_000;

/** The waits of a request's attempts: the first short (a frozen or cut-off engine costs this much), each next one twice as long. */
export const FIRST_ATTEMPT_MS = 1_000;

/** How long the next attempt may wait: double the last, within what is left of the caller's deadline. */
export const nextAttemptMs = (attempt: number, leftMs: number): number => Math.max(1, Math.min(leftMs, FIRST_ATTEMPT_MS * 2 ** attempt));

/** Which engine last answered for each thread. */
export class EngineAddresses {
  private readonly byThread = new Map<string, string>();

  of(threadId: string | undefined): string | undefined {
    if (threadId === undefined) return undefined;
    const engineId = this.byThread.get(threadId);
    if (engineId !== undefined) {
      // Used again: the last to be forgotten.
      this.byThread.delete(threadId);
      this.byThread.set(threadId, engineId);
    }
    return engineId;
  }

  /** What an answer for the thread said of the engine that gave it (nothing from a single engine). */
  learn(threadId: string | undefined, headers: Readonly<Record<string, string>>): void {
    const engineId = headers[ENGINE_HEADER];
    if (threadId === undefined || engineId === undefined || !/^[A-Za-z0-9_-]{1,128}$/.test(engineId)) return;
    this.byThread.delete(threadId);
    this.byThread.set(threadId, engineId);
    if (this.byThread.size > REMEMBERED) this.byThread.delete(this.byThread.keys().next().value!);
  }

  forget(threadId: string | undefined): void {
    if (threadId !== undefined) this.byThread.delete(threadId);
  }
}
