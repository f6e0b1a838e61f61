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

import { setTimeout as sleep } from 'node:timers/promises';
import { type Bus, BusError, type BusMessage } from '../domain/index.ts';

/** The header naming the engine of a cluster that answered. */
export const ENGINE_HEADER = 'turnloom-engine';

/** How many threads' engines a caller remembers, the least recently used forgotten first. */
const REMEMBERED = 10_000;

/** The waits of a request's attempts: the first short (a frozen or cut-off engine costs this much), each next one twice as long. */
export const FIRST_ATTEMPT_MS = 1_000;

/** How long the next attempt may wait: double the last, within what is left of the caller's deadline. */
export const nextAttemptMs = (attempt: number, leftMs: number): number => Math.max(1, Math.min(leftMs, FIRST_ATTEMPT_MS * 2 ** attempt));

/** Which engine last answered for each thread, and whether answers come from a cluster at all. */
export class EngineAddresses {
  private readonly byThread = new Map<string, string>();
  /** What the last answer said of who answers: a cluster's engines name themselves, a single engine does not. */
  private answeredBy: 'nobody yet' | 'one engine' | 'a cluster' = 'nobody yet';

  /**
   * Whether silence may be an engine lost among others, worth asking
   * another: not once a single engine answered, where asking again only
   * sends the same request to the same busy engine (under load, a second
   * copy of every write that took over a second, which made it slower still).
   */
  get othersMayAnswer(): boolean {
    return this.answeredBy !== 'one engine';
  }

  /** Any answer: whether it came from a cluster's engine. */
  heard(headers: Readonly<Record<string, string>>): void {
    this.answeredBy = headers[ENGINE_HEADER] === undefined ? 'one engine' : 'a cluster';
  }

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

/** One request, as `askEngines` sends it. */
export interface EngineRequest {
  /** The subject of an attempt: addressed to that engine, or (`undefined`) the one every engine shares. */
  subjectFor(engineId: string | undefined): string;
  data: Uint8Array;
  headers: Record<string, string>;
  /** The caller's whole wait. */
  timeoutMs: number;
  /** The thread it is about: its engine is addressed, and learned from the answer (`learnFrom` may name another, as `thread.create`'s answer does). */
  threadId: string | undefined;
  addresses: EngineAddresses;
  /** Silence is asked again after 1 s, 2, 4… (`true`), or waited out in one attempt. */
  retried: boolean;
  /**
   * Whether an answer says `unavailable`, and after how long it may be asked
   * again (`details.retryAfterMs`, or `null`). One from an engine addressed
   * directly is asked again at once, through the shared subject (that engine
   * no longer serves the thread); one through the shared subject, after its
   * `retryAfterMs`, or never (it is the answer: too large, say).
   */
  unavailable(reply: BusMessage): { retryAfterMs: number | null } | null;
  /** The thread whose engine the answer names (default: `threadId`). */
  learnFrom?(reply: BusMessage): string | undefined;
}

/** What `EngineRequest.unavailable` says of an answer body (`{ result }` or `{ error }`). */
export function unavailableIn(body: { error?: { code: string; details?: Record<string, unknown> } } | object): { retryAfterMs: number | null } | null {
  const error = 'error' in body ? (body.error as { code: string; details?: Record<string, unknown> }) : undefined;
  if (error?.code !== 'unavailable') return null;
  const after = error.details?.retryAfterMs;
  return { retryAfterMs: typeof after === 'number' && after >= 0 ? after : null };
}

type Attempt = { kind: 'reply'; reply: BusMessage; engineId: string | undefined } | { kind: 'failed'; error: unknown; engineId: string | undefined };

/**
 * Asks until answered or the caller's time is up: an attempt met by silence
 * for its window (1 s, then 2, 4…) is asked again, through the shared
 * subject when it was addressed to an engine, while the earlier attempts
 * may still answer: the first answer of any of them is the answer, so a
 * slow engine that does answer is never cut off. Every attempt carries the
 * same body, so only requests safe to repeat (commands with one command id,
 * reads) may be asked this way. Resolves with the answer (an `unavailable`
 * one too, once there is no time left for another try); rejects with the
 * bus's error when nothing answered at all.
 */
export async function askEngines(bus: Bus, request: EngineRequest): Promise<BusMessage> {
  const { threadId, addresses } = request;
  const deadline = performance.now() + request.timeoutMs;
  const left = () => deadline - performance.now();
  const pending = new Set<Promise<Attempt>>();
  const launch = () => {
    const engineId = addresses.of(threadId);
    const attempt: Promise<Attempt> = bus.request(request.subjectFor(engineId), request.data, { headers: request.headers, timeoutMs: Math.max(1, left()) }).then(
      (reply) => ({ kind: 'reply', reply, engineId }),
      (error: unknown) => ({ kind: 'failed', error, engineId }),
    );
    pending.add(attempt);
    void attempt.then(() => pending.delete(attempt));
  };
  launch();
  let lastFailure: unknown;
  for (let attempt = 0; ; ) {
    let timer: NodeJS.Timeout | undefined;
    const retried = request.retried && addresses.othersMayAnswer;
    // Past the deadline, the attempts still out are about to fail by their own timeouts: waited for in short steps.
    const window = left() <= 0 ? 50 : retried ? nextAttemptMs(attempt, left()) : left();
    const outcome = pending.size === 0 ? 'window' : await Promise.race([...pending, new Promise<'window'>((resolve) => (timer = setTimeout(() => resolve('window'), window)))]);
    clearTimeout(timer);
    if (outcome !== 'window' && outcome.kind === 'reply') {
      addresses.heard(outcome.reply.headers);
      const unavailable = request.unavailable(outcome.reply);
      if (!unavailable) {
        addresses.learn(request.learnFrom?.(outcome.reply) ?? threadId, outcome.reply.headers);
        return outcome.reply;
      }
      addresses.forget(threadId);
      const pause = outcome.engineId !== undefined ? 0 : unavailable.retryAfterMs;
      if (!request.retried || pause === null || pause >= left()) return outcome.reply;
      if (pause > 0) await sleep(pause);
    } else if (outcome !== 'window') {
      addresses.forget(threadId);
      lastFailure = outcome.error;
      // Addressed to one engine, any failure sends it through the shared subjects; there, only silence is worth another try.
      const again = retried && (outcome.engineId !== undefined || (outcome.error instanceof BusError && outcome.error.kind === 'timeout'));
      if (!again && pending.size === 0) throw outcome.error;
      if (!again || pending.size > 0) continue;
    }
    // An engine addressed and silent for a whole window is passed over: the next attempt goes through the shared subject.
    if (outcome === 'window') addresses.forget(threadId);
    if (left() <= 0) {
      if (pending.size > 0) continue;
      throw lastFailure ?? new BusError('timeout', `request to ${request.subjectFor(undefined)} timed out`, request.subjectFor(undefined));
    }
    attempt += 1;
    launch();
  }
}
