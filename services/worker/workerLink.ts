import { setTimeout as sleep } from 'node:timers/promises';
import { MSGPACK, type Subjects, decode, encode } from '../../bus/index.ts';
import { type Bus, type BusMessage, type ErrorBody, TurnloomError } from '../../domain/index.ts';
import { EngineAddresses, askEngines, unavailableIn } from '../../protocol/engineAddress.ts';
import type { WorkerMethod } from '../dispatch/workerProtocol.ts';

/** Answers that say "not now" (the engine is away, restarting, or the bus is reconnecting), as opposed to "no". */
export const isTransient = (error: unknown): boolean => error instanceof TurnloomError && error.code === 'unavailable';

/**
 * A worker's line to the engine: request/reply on
 * `<p>.v1.worker.<environment>.<method>` (the subjects of the one environment
 * it serves), msgpack, every answer `{ result }` or a typed error. `persist`
 * keeps asking through an engine restart or a NATS outage, backing off, until
 * the engine answers (yes or no) or the signal stops it.
 */
export class WorkerLink {
  private readonly addresses = new EngineAddresses();

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    private readonly environment: string,
    /**
     * Every worker write is answered in milliseconds, and a retry of one is
     * safe (the engine answers it from its receipt, or joins the run of the
     * same command in flight); a request whose engine died on it is never
     * answered, so short waits are what bound how long a turn stalls when
     * that engine goes (a cluster's owner, killed, frozen or cut off): the
     * first attempt waits a second, each next one twice as long, within this.
     */
    private readonly timeoutMs = 4_000,
  ) {}

  /**
   * One request, to the engine of a cluster that last answered for its
   * thread when there is one (see `protocol/engineAddress.ts`), else through
   * the environment's shared subject; silence is asked again there. (A hello
   * asked again says what the worker ran when it was made, up to the 4 s of
   * its wait: the engine counts a lease a hello leaves out as not run only
   * past that, see the gateway's `UNRUN_AFTER_MS`.)
   */
  async call<T>(method: WorkerMethod, body: object, headers: Record<string, string> = {}): Promise<T> {
    const answerOf = (reply: BusMessage) => decode(reply.data, reply.headers['content-type'] === 'application/json' ? 'application/json' : MSGPACK) as { result: T } | { error: ErrorBody };
    const reply = await askEngines(this.bus, {
      subjectFor: (engineId) => (engineId ? this.subjects.workerAt(this.environment, engineId, method) : this.subjects.worker(this.environment, method)),
      data: encode(body, MSGPACK),
      headers: { ...headers, 'content-type': MSGPACK },
      timeoutMs: this.timeoutMs,
      threadId: 'threadId' in body && typeof body.threadId === 'string' ? body.threadId : undefined,
      addresses: this.addresses,
      retried: true,
      unavailable: (answer) => unavailableIn(answerOf(answer)),
    });
    const answer = answerOf(reply);
    if ('error' in answer) throw TurnloomError.fromJSON(answer.error);
    return answer.result;
  }

  /** A request whose answer nobody waits for: no timer is left behind. */
  notify(method: WorkerMethod, body: object): void {
    this.bus.publish(this.subjects.worker(this.environment, method), encode(body, MSGPACK), { headers: { 'content-type': MSGPACK }, reply: this.bus.inbox() });
  }

  async persist<T>(method: WorkerMethod, body: object, signal: AbortSignal, headers: Record<string, string> = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call<T>(method, body, headers);
      } catch (error) {
        if (!isTransient(error) || signal.aborted) throw error;
        await sleep(Math.min(2_000, 50 * 2 ** attempt), undefined, { signal }).catch(() => undefined);
        if (signal.aborted) throw error;
      }
    }
  }
}
