import { type Bus, type BusMessage, type ErrorBody, TurnloomError } from '../domain/index.ts';
import { type ContentType, MSGPACK, type Subjects, decode, encode, subjects as subjectsFor } from '../bus/index.ts';
import type { ApiMethod, ApiParamsIn, ApiResults } from '../protocol/index.ts';
import type { ApiCaller } from '../protocol/apiCaller.ts';
import { commandMethods } from '../protocol/apiSchemas.ts';
import { EngineAddresses, askEngines, unavailableIn } from '../protocol/engineAddress.ts';
import { type ApprovalDecision, type StartTurnOptions, TurnHandle } from './turnHandle.ts';
import { ThreadWatch, type ThreadWatchOptions } from '../protocol/threadWatch.ts';

export interface ClientOptions {
  /** Subject prefix of the deployment (default `turnloom`). */
  prefix?: string;
  /** Sent as `authorization: Bearer <token>`. */
  token?: string;
  /** msgpack (default) or JSON on the wire. */
  contentType?: ContentType;
  timeoutMs?: number;
}

/** A typed caller of the headless API over any bus. */
export class TurnloomClient implements ApiCaller {
  readonly bus: Bus;
  readonly subjects: Subjects;
  private readonly options: ClientOptions;
  private readonly addresses = new EngineAddresses();

  constructor(bus: Bus, options: ClientOptions = {}) {
    this.bus = bus;
    this.subjects = subjectsFor(options.prefix);
    this.options = options;
  }

  /**
   * Calls a method; a `{ error }` answer is thrown as a `TurnloomError` with
   * its code. Against a cluster, a request about a thread goes to the engine
   * that last answered for it, and a request met by silence (an engine
   * frozen, or cut off) or by `unavailable` is asked again, after a short
   * wait that doubles, until `timeoutMs`: safe, since a command carries one
   * command id through every attempt (made here when the caller gave none).
   */
  async call<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): Promise<ApiResults[M]> {
    const { contentType, headers } = this.envelope();
    const fields = params as Record<string, unknown>;
    const sent = commandMethods.has(method) && fields.commandId === undefined ? { ...fields, commandId: globalThis.crypto.randomUUID() } : fields;
    const answerOf = (reply: BusMessage) => decode(reply.data, reply.headers['content-type'] === 'application/json' ? 'application/json' : contentType) as { result: ApiResults[M] } | { error: ErrorBody };
    const reply = await askEngines(this.bus, {
      subjectFor: (engineId) => (engineId ? this.subjects.apiAt(engineId, method) : this.subjects.api(method)),
      data: encode(sent, contentType),
      headers,
      timeoutMs: this.options.timeoutMs ?? 10_000,
      threadId: typeof fields.threadId === 'string' ? fields.threadId : undefined,
      addresses: this.addresses,
      // A revert waits for a worker to restore the files: one attempt, for as long as the caller allows.
      retried: method !== 'checkpoint.revert',
      unavailable: (answer) => unavailableIn(answerOf(answer)),
      ...(method === 'thread.create' ? { learnFrom: (answer: BusMessage) => (answerOf(answer) as { result?: ApiResults['thread.create'] }).result?.threadId } : {}),
    });
    const body = answerOf(reply);
    if ('error' in body) throw TurnloomError.fromJSON(body.error);
    return body.result;
  }

  notify<M extends ApiMethod>(method: M, params: ApiParamsIn<M>): void {
    const { contentType, headers } = this.envelope();
    // The API answers only requests with an inbox to answer to: this one is nobody's.
    this.bus.publish(this.subjects.api(method), encode(params, contentType), { headers, reply: this.bus.inbox() });
  }

  private envelope(): { contentType: ContentType; headers: Record<string, string> } {
    const contentType = this.options.contentType ?? MSGPACK;
    const headers: Record<string, string> = { 'content-type': contentType };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    return { contentType, headers };
  }

  /**
   * Starts a turn (in a new thread unless `threadId` names one) and follows
   * it: its text as it is typed, its changes, approvals to answer, and
   * `done`, the settled turn (see `TurnHandle`).
   */
  startTurn(options: StartTurnOptions): Promise<TurnHandle> {
    return TurnHandle.start(this, options);
  }

  /** Answers an approval of a thread. */
  answerApproval(threadId: string, approvalId: string, decision: ApprovalDecision, note?: string): Promise<ApiResults['approval.respond']> {
    return this.call('approval.respond', { threadId, approvalId, decision: decision === 'approve' ? 'once' : decision, ...(note === undefined ? {} : { note }) });
  }

  /** Asks a thread's open turn (or the named one) to stop. */
  interrupt(threadId: string, turnId?: string, reason?: string): Promise<ApiResults['turn.interrupt']> {
    return this.call('turn.interrupt', { threadId, ...(turnId === undefined ? {} : { turnId }), ...(reason === undefined ? {} : { reason }) });
  }

  /** A live, self-healing view of one thread (see `ThreadWatch`). */
  async watchThread(threadId: string, options: ThreadWatchOptions = {}): Promise<ThreadWatch> {
    const watch = new ThreadWatch(this, threadId, options);
    await watch.start();
    return watch;
  }
}
