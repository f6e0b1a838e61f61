import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type ContentType, type Subjects, contentTypeOf, decode, encode, isInbox } from '../../bus/index.ts';
import { type Bus, BusError, type BusMessage, type BusSubscription, type Logger, TurnloomError } from '../../domain/index.ts';
import { derivedId } from '../engine/commands.ts';
import { type ApiMethod, apiParams, isApiMethod } from '../../protocol/apiSchemas.ts';

/** What the router needs to know of the cluster: who owns a thread, who is alive, and how to take a thread. */
export interface Placement {
  readonly engineId: string;
  holds(threadId: string): boolean;
  /** The thread's owner, if a live engine owns it. */
  liveOwnerOf(threadId: string): string | null;
  isLive(engineId: string): boolean;
  /** Takes the thread (nobody alive owns it, or `gone` does not answer); `false` when another live engine has it. */
  take(threadId: string, gone?: string): Promise<boolean>;
  /** Brings this engine's copy of a thread nobody owns up to its log. */
  catchUp(threadId: string): Promise<void>;
  /** Brings this engine's copy of every thread up to where the log ends now (throws `unavailable` when it cannot soon). */
  catchUpAll(): Promise<void>;
}

/** Serves one request here: `answerTo`, when given, is where the answer goes (a relay's inbox) instead of the caller's. */
export type Serve = (message: BusMessage, answerTo?: string) => Promise<void>;

/** The caller's own reply subject on a request passed on between engines (whose reply is the passing engine's inbox). */
const CALLER_REPLY = 'turnloom-caller-reply';
/** How many times a request was passed on: at most twice, then it is served wherever it is. */
const HOPS = 'turnloom-hops';

/** The longest an owner may take to answer a request passed on to it (a revert waits up to 120 s for its worker). */
const FORWARD_TIMEOUT_MS = 150_000;
/** How often a request passed on checks that the engine serving it is still alive. */
const OWNER_CHECK_MS = 200;

/** API methods that only read a thread: a thread nobody owns is read from this engine's copy, without taking it. */
const readMethods = new Set<ApiMethod>(['thread.get', 'thread.turns', 'thread.events', 'checkpoint.list', 'checkpoint.diff', 'approval.list']);

/**
 * API methods that list across threads, served from this engine's copy:
 * it is first brought up to where the log ends, so a list shows every
 * write acknowledged before it was asked, whichever engine took the write.
 */
const listMethods = new Set<ApiMethod>(['thread.list', 'approval.list']);

/** API methods that write through a command id: one is given to a request that has none, so it is never run twice when passed on again. */
const commandMethods = new Set<ApiMethod>(
  Object.entries(apiParams)
    .filter(([, schema]) => schema instanceof z.ZodObject && 'commandId' in schema.shape)
    .map(([method]) => method as ApiMethod),
);

interface Addressed {
  kind: 'api' | 'worker';
  method: string;
  /** The thread the request is about, if any: it is served by that thread's owner. */
  threadId: string | undefined;
  /** The message to serve, with a command id added where it had none. */
  message: BusMessage;
}

/**
 * Routes requests that come on the subjects every engine of a cluster
 * shares (the API's and the workers', in queue groups) to the engine that
 * owns their thread: served here when this engine owns it (or takes it,
 * when no live engine does), passed on to the owner otherwise, over
 * `<p>.v1.engine.<owner>.relay.…`, with the answer passed back. A request
 * about no thread (listing, health, a worker's hello) is served here. An
 * owner that stops answering (its connection is gone, or its membership
 * lapsed) is replaced while the request waits: the thread is taken and the
 * request served here, under the same command id.
 */
export class RequestRouter {
  /** Requests about a thread served here, passed on to its owner, and taken over from an owner that did not answer. */
  readonly counts = { servedHere: 0, passedOn: 0, takenOver: 0 };

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    private readonly placement: Placement,
    private readonly log: Logger,
  ) {}

  /** Serves a request that came on the shared subjects, here or on the owner of its thread. */
  route(message: BusMessage, serve: (message: BusMessage) => Promise<void>): Promise<void> {
    return this.routeFrom(message, serve, 0, message.reply);
  }

  /** `answerTo`: where the answer goes, the caller's reply or, for a request passed on, the inbox of the engine that passed it. */
  private async routeFrom(original: BusMessage, serve: (message: BusMessage) => Promise<void>, hops: number, answerTo: string | undefined): Promise<void> {
    // Nothing can be answered (a bare publish, a reply that is not an inbox): served here, where it is refused as ever.
    if (!original.reply || !isInbox(original.reply) || !answerTo) return serve(original);
    const addressed = this.address(original);
    if (!addressed?.threadId) {
      if (addressed?.kind === 'api' && listMethods.has(addressed.method as ApiMethod)) {
        const behind = await this.placement.catchUpAll().then(
          () => null,
          (error: unknown) => (error instanceof TurnloomError ? error : new TurnloomError('unavailable', String(error))),
        );
        if (behind) return this.answer(answerTo, behind);
      }
      return serve(addressed?.message ?? original);
    }
    return this.routeTo(addressed.threadId, addressed, serve, hops, answerTo);
  }

  private async routeTo(threadId: string, addressed: Addressed, serve: (message: BusMessage) => Promise<void>, hops: number, answerTo: string): Promise<void> {
    const { placement } = this;
    const { message } = addressed;
    const here = () => {
      this.counts.servedHere += 1;
      return serve(message);
    };
    if (placement.holds(threadId)) return here();
    const read = addressed.kind === 'api' && readMethods.has(addressed.method as ApiMethod);
    if (hops >= 2) {
      // Passed on twice and still not at its owner (ownership is moving): a read is served from this copy, a write is asked again.
      if (read) {
        await placement.catchUp(threadId);
        return here();
      }
      return this.answer(answerTo, new TurnloomError('unavailable', `thread ${threadId} is changing hands between engines; try again`, { threadId }));
    }
    const owner = placement.liveOwnerOf(threadId);
    if (owner !== null && owner !== placement.engineId) {
      const gone = await this.forward(owner, message, hops, answerTo);
      if (!gone) {
        this.counts.passedOn += 1;
        return;
      }
      this.counts.takenOver += 1;
      if (await placement.take(threadId, owner)) return here();
      return this.routeTo(threadId, addressed, serve, hops + 1, answerTo);
    }
    if (read) {
      await placement.catchUp(threadId);
      return here();
    }
    if (await placement.take(threadId)) return here();
    // Another engine took it a moment ago.
    return this.routeTo(threadId, addressed, serve, hops + 1, answerTo);
  }

  /** What a request is about, read from its subject and body; `undefined` when it cannot be read (served here, which refuses it). */
  private address(message: BusMessage): Addressed | undefined {
    const tail = this.subjects.tailOf(message.subject);
    if (tail === undefined) return undefined;
    let contentType: ContentType;
    let body: unknown;
    try {
      contentType = contentTypeOf(message.headers, message.data);
      body = decode(message.data, contentType);
    } catch {
      return undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const params = body as Record<string, unknown>;
    const threadId = typeof params.threadId === 'string' ? params.threadId : undefined;
    if (tail.startsWith('api.')) {
      const method = tail.slice('api.'.length);
      if (!isApiMethod(method)) return undefined;
      // A new thread's id, when the client left it out, is derived from the command id, as the API derives it.
      const threadOf = (commandId: unknown) => threadId ?? (method === 'thread.create' && typeof commandId === 'string' ? derivedId('thr', commandId) : undefined);
      if (!commandMethods.has(method) || params.commandId !== undefined) return { kind: 'api', method, threadId: threadOf(params.commandId), message };
      // The same command id wherever it ends up being run, so a request passed on and then served elsewhere runs once.
      const commandId = randomUUID();
      return { kind: 'api', method, threadId: threadOf(commandId), message: { ...message, data: encode({ ...params, commandId }, contentType) } };
    }
    const worker = this.subjects.workerMethodOf(message.subject);
    if (!worker) return undefined;
    return { kind: 'worker', method: worker.method, threadId: worker.method === 'hello' ? undefined : threadId, message };
  }

  /**
   * Passes the request on to the owner and its answer back to the caller;
   * resolves `true` when the owner turned out to be gone (nothing answered
   * it: no connection listens for it, or its membership lapsed while it
   * waited), so the caller may take the thread and serve it.
   */
  private async forward(owner: string, message: BusMessage, hops: number, answerTo: string): Promise<boolean> {
    const tail = this.subjects.tailOf(message.subject)!;
    const { [HOPS]: _hops, [CALLER_REPLY]: _reply, ...own } = message.headers;
    const headers: Record<string, string> = { ...own, [CALLER_REPLY]: message.reply!, [HOPS]: String(hops + 1) };
    let checker: NodeJS.Timeout | undefined;
    const ownerGone = new Promise<'gone'>((resolve) => {
      checker = setInterval(() => {
        if (!this.placement.isLive(owner)) resolve('gone');
      }, OWNER_CHECK_MS);
    });
    try {
      const answer = await Promise.race([this.bus.request(this.subjects.engineRelay(owner, tail), message.data, { headers, timeoutMs: FORWARD_TIMEOUT_MS }), ownerGone]);
      if (answer === 'gone') {
        this.log.info({ owner, subject: message.subject }, 'the owner of a thread went away while serving a request; taking it');
        return true;
      }
      this.bus.publish(answerTo, answer.data, { headers: { 'content-type': answer.headers['content-type'] ?? 'application/json' } });
      return false;
    } catch (error) {
      if (error instanceof BusError && error.kind === 'no_responders') return true;
      this.answer(answerTo, error instanceof TurnloomError ? error : new TurnloomError('unavailable', `engine ${owner} did not answer: ${String(error)}`));
      return false;
    } finally {
      clearInterval(checker);
    }
  }

  private answer(answerTo: string, error: TurnloomError): void {
    this.bus.publish(answerTo, encode({ error: error.toJSON() }, 'application/json'), { headers: { 'content-type': 'application/json' } });
  }

  /**
   * Serves the requests other engines pass on to this one, as if they had
   * come on the shared subjects (the caller's reply subject is what the
   * checks of inbox spaces look at), answering the engine that passed them.
   */
  serveRelays(serve: { api: Serve; worker: Serve }): BusSubscription {
    const relayed = this.subjects.engineRelay(this.placement.engineId, '');
    return this.bus.subscribe(this.subjects.engineRelayAll(this.placement.engineId), (relay) => {
      const tail = relay.subject.slice(relayed.length);
      const { [CALLER_REPLY]: callerReply, [HOPS]: hops, ...headers } = relay.headers;
      if (!relay.reply || !callerReply || !(tail.startsWith('api.') || tail.startsWith('worker.'))) return;
      const message: BusMessage = { subject: `${this.subjects.prefix}.v1.${tail}`, data: relay.data, headers, reply: callerReply };
      const answerTo = relay.reply;
      const serveHere = (routed: BusMessage) => (tail.startsWith('api.') ? serve.api : serve.worker)(routed, answerTo);
      this.routeFrom(message, serveHere, Number(hops ?? 1), answerTo).catch((error: unknown) => this.log.error({ subject: message.subject, error: String(error) }, 'could not serve a request passed on by another engine'));
    });
  }
}
