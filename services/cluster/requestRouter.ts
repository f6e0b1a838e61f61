import { randomUUID } from 'node:crypto';
import { type ContentType, type Subjects, contentTypeOf, decode, encode, isInbox } from '../../bus/index.ts';
import { type Bus, BusError, type BusMessage, type BusSubscription, type Logger, TurnloomError } from '../../domain/index.ts';
import { derivedId } from '../engine/commands.ts';
import { type ApiMethod, apiParams, commandMethods, isApiMethod } from '../../protocol/apiSchemas.ts';
import { ENGINE_HEADER } from '../../protocol/engineAddress.ts';
import { type ListAnswer, mergeLists } from './listMerge.ts';

/** What the router needs to know of the cluster: which shard a thread is in, who owns it, and how to take it. */
export interface Placement {
  readonly engineId: string;
  shardOf(threadId: string): number;
  /** Why this engine serves nothing now (it is not a member, its store fails), or `null` when it serves. */
  notServing(): string | null;
  /** Whether this engine owns the shard (its copy may still be coming up). */
  holds(shard: number): boolean;
  /** Gets the thread ready to be served here (the shard's copy whole, the thread read again if it moved); `false` when the shard was lost meanwhile. */
  prepare(threadId: string): Promise<boolean>;
  /** The shard's owner, if a live engine owns it. */
  liveOwnerOf(shard: number): string | null;
  isLive(engineId: string): boolean;
  /** Takes the shard (nobody alive owns it, or `gone` does not answer); `false` when another live engine has it. */
  take(shard: number, gone?: string): Promise<boolean>;
  /** Every shard by its live owner, taking here those nobody alive owns. */
  owners(): Promise<Map<string, number[]>>;
  /** Whether this engine serves every one of these shards (waiting for copies coming up). */
  covers(shards: readonly number[]): Promise<boolean>;
  /** A thread's place in the newest-first listing, as this engine's copy has it. */
  positionOf(threadId: string): number;
}

/** Serves one request here: `answerTo`, when given, is where the answer goes (a relay's inbox) instead of the caller's. */
export type Serve = (message: BusMessage, answerTo?: string) => Promise<void>;

/** The caller's own reply subject on a request passed on between engines (whose reply is the passing engine's inbox). */
const CALLER_REPLY = 'turnloom-caller-reply';
/** How many times a request was passed on: at most twice, then it is answered `unavailable`. */
const HOPS = 'turnloom-hops';
/** On a list's part passed to one engine: the shards it answers for. */
const SHARDS = 'turnloom-shards';
/** On an answer from an engine that serves nothing now (its membership lapsed, its folder failed): why. */
const NOT_SERVING = 'turnloom-not-serving';
/** On the answer to a part of `thread.list`: each thread's place in the listing, in the answer's order. */
const POSITIONS = 'turnloom-positions';

/** The longest an owner may take to answer a request passed on to it (a revert waits up to 120 s for its worker). */
const FORWARD_TIMEOUT_MS = 150_000;
/** How often a request passed on checks that the engine serving it is still alive. */
const OWNER_CHECK_MS = 200;
/** How long a list waits for each engine's part of it before it answers `unavailable`. */
const PART_TIMEOUT_MS = 5_000;

/** API methods that list across threads: every engine answers for the shards it owns, and the answers are merged. */
const listMethods = new Set<ApiMethod>(['thread.list', 'approval.list']);

interface Addressed {
  kind: 'api' | 'worker';
  method: string;
  /** The thread the request is about, if any: it is served by the owner of that thread's shard. */
  threadId: string | undefined;
  /** The message to serve, with a command id added where it had none. */
  message: BusMessage;
  contentType: ContentType;
  params: Record<string, unknown>;
}

/**
 * Routes requests to the engine that owns their thread's shard: those that
 * come on the subjects every engine shares (the API's and the workers', in
 * queue groups), those addressed to this engine by a caller that saw it
 * answer for the thread (`<p>.v1.api.<engineId>.…`), and those other engines
 * pass on (`<p>.v1.engine.<engineId>.relay.…`). A request is served here when
 * this engine owns the shard (or takes it, when no live engine does), passed
 * on to the owner otherwise, with the answer passed back. An owner that stops
 * answering (no connection listens for it, or its membership lapsed) is
 * replaced while the request waits: the shard is taken and the request
 * served here, under the same command id. A list is asked of every engine
 * for the shards it owns, and the answers merged by position.
 */
export class RequestRouter {
  /** Requests about a thread served here, passed on to its owner, and taken over from an owner that did not answer. */
  readonly counts = { servedHere: 0, passedOn: 0, takenOver: 0 };

  constructor(
    private readonly bus: Bus,
    private readonly subjects: Subjects,
    private readonly placement: Placement,
    private readonly log: Logger,
    /** How large a merged list's answer may be (half the bus's payload limit, as one engine's). */
    private readonly replyBudgetBytes: number,
  ) {}

  /** Serves a request that came on the shared subjects, here or on the owner of its thread. */
  route(message: BusMessage, serve: (message: BusMessage) => Promise<void>): Promise<void> {
    return this.routeFrom(message, serve, 0, message.reply);
  }

  /**
   * `answerTo`: where the answer goes, the caller's reply or, for a request
   * passed on, the inbox of the engine that passed it. Whatever goes wrong
   * on the way (a shard that cannot be taken, JetStream away) is answered,
   * `unavailable`, never left for the caller to wait out.
   */
  private async routeFrom(original: BusMessage, serve: (message: BusMessage) => Promise<void>, hops: number, answerTo: string | undefined): Promise<void> {
    // Nothing can be answered (a bare publish, a reply that is not an inbox): served here, where it is refused as ever.
    if (!original.reply || !isInbox(original.reply) || !answerTo) return serve(original);
    try {
      await this.routeAnswerable(original, serve, hops, answerTo);
    } catch (error) {
      this.answer(answerTo, error instanceof TurnloomError ? error : TurnloomError.tryAgain(`engine ${this.placement.engineId} could not route the request: ${error instanceof Error ? error.message : String(error)}; try again`));
    }
  }

  private async routeAnswerable(original: BusMessage, serve: (message: BusMessage) => Promise<void>, hops: number, answerTo: string): Promise<void> {
    const why = this.placement.notServing();
    if (why !== null) {
      // Said in a header too: an engine that passed the request on takes the thread's shard and serves it, rather than pass this back.
      return this.answer(answerTo, TurnloomError.tryAgain(`engine ${this.placement.engineId} serves nothing for now (${why}); try again: another engine answers`, { engineId: this.placement.engineId }), { [NOT_SERVING]: why });
    }
    const addressed = this.address(original);
    if (!addressed?.threadId) {
      if (addressed?.kind === 'api' && listMethods.has(addressed.method as ApiMethod)) return this.gather(addressed, answerTo);
      return serve(addressed?.message ?? original);
    }
    return this.routeTo(addressed.threadId, addressed, serve, hops, answerTo);
  }

  private async routeTo(threadId: string, addressed: Addressed, serve: (message: BusMessage) => Promise<void>, hops: number, answerTo: string): Promise<void> {
    const { placement } = this;
    const shard = placement.shardOf(threadId);
    const here = async () => {
      const prepared = await placement.prepare(threadId).catch((error: unknown) => (error instanceof TurnloomError ? error : TurnloomError.tryAgain(`thread ${threadId} could not be read from the log: ${String(error)}; try again`)));
      if (prepared instanceof TurnloomError) return this.answer(answerTo, prepared);
      if (!prepared) return this.routeTo(threadId, addressed, serve, hops + 1, answerTo);
      this.counts.servedHere += 1;
      return serve(addressed.message);
    };
    if (placement.holds(shard)) return here();
    if (hops >= 2) {
      // Passed on twice and still not at its owner: the shard is changing hands; asked again, it will have settled.
      return this.answer(answerTo, TurnloomError.tryAgain(`thread ${threadId} is changing hands between engines; try again`, { threadId }));
    }
    const owner = placement.liveOwnerOf(shard);
    if (owner !== null && owner !== placement.engineId) {
      const gone = await this.forward(owner, addressed.message, hops, answerTo);
      if (!gone) {
        this.counts.passedOn += 1;
        return;
      }
      this.counts.takenOver += 1;
      if (await placement.take(shard, owner)) return here();
      return this.routeTo(threadId, addressed, serve, hops + 1, answerTo);
    }
    if (await placement.take(shard)) return here();
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
      if (!commandMethods.has(method) || params.commandId !== undefined) return { kind: 'api', method, threadId: threadOf(params.commandId), message, contentType, params };
      // The same command id wherever it ends up being run, so a request passed on and then served elsewhere runs once.
      const commandId = randomUUID();
      return { kind: 'api', method, threadId: threadOf(commandId), message: { ...message, data: encode({ ...params, commandId }, contentType) }, contentType, params: { ...params, commandId } };
    }
    const worker = this.subjects.workerMethodOf(message.subject);
    if (!worker) return undefined;
    return { kind: 'worker', method: worker.method, threadId: worker.method === 'hello' ? undefined : threadId, message, contentType, params };
  }

  /**
   * Passes the request on to the owner and its answer back to the caller;
   * resolves `true` when the owner turned out to be gone (nothing answered
   * it: no connection listens for it, or its membership lapsed while it
   * waited), so the caller may take the shard and serve it.
   */
  private async forward(owner: string, message: BusMessage, hops: number, answerTo: string): Promise<boolean> {
    const tail = this.subjects.tailOf(message.subject)!;
    let checker: NodeJS.Timeout | undefined;
    const ownerGone = new Promise<'gone'>((resolve) => {
      checker = setInterval(() => {
        if (!this.placement.isLive(owner)) resolve('gone');
      }, OWNER_CHECK_MS);
    });
    try {
      const answer = await Promise.race([this.bus.request(this.subjects.engineRelay(owner, tail), message.data, { headers: this.relayHeaders(message, hops), timeoutMs: FORWARD_TIMEOUT_MS }), ownerGone]);
      if (answer === 'gone' || answer.headers[NOT_SERVING] !== undefined) {
        this.log.info({ owner, subject: message.subject }, 'the owner of a shard went away, or serves nothing now; taking it');
        return true;
      }
      this.pass(answer, answerTo);
      return false;
    } catch (error) {
      if (error instanceof BusError && error.kind === 'no_responders') return true;
      this.answer(answerTo, error instanceof TurnloomError ? error : TurnloomError.tryAgain(`engine ${owner} did not answer: ${String(error)}`));
      return false;
    } finally {
      clearInterval(checker);
    }
  }

  private relayHeaders(message: BusMessage, hops: number, extra: Record<string, string> = {}): Record<string, string> {
    const { [HOPS]: _hops, [CALLER_REPLY]: _reply, [SHARDS]: _shards, ...own } = message.headers;
    return { ...own, ...extra, [CALLER_REPLY]: message.reply!, [HOPS]: String(hops + 1) };
  }

  /** An answer from another engine, passed on as it came (with the engine that gave it, for the caller to address next time). */
  private pass(answer: BusMessage, answerTo: string): void {
    const engine = answer.headers[ENGINE_HEADER];
    this.bus.publish(answerTo, answer.data, { headers: { 'content-type': answer.headers['content-type'] ?? 'application/json', ...(engine ? { [ENGINE_HEADER]: engine } : {}) } });
  }

  private answer(answerTo: string, error: TurnloomError, headers: Record<string, string> = {}): void {
    this.bus.publish(answerTo, encode({ error: error.toJSON() }, 'application/json'), { headers: { ...headers, 'content-type': 'application/json' } });
  }

  /**
   * A list over every thread: each engine that owns shards is asked for its
   * part (this one too, the same way), each part answered by the engine's
   * own API for the shards named, and the parts merged by position (threads)
   * or key (approvals) into one page, as one engine would answer it.
   */
  private async gather(addressed: Addressed, answerTo: string): Promise<void> {
    const method = addressed.method as 'thread.list' | 'approval.list';
    const parsed = apiParams[method].safeParse(addressed.params);
    if (!parsed.success) {
      // The engine's own API says what is wrong with it.
      return this.relayToSelf(addressed.message, answerTo);
    }
    let owners: Map<string, number[]>;
    try {
      owners = await this.placement.owners();
    } catch (error) {
      return this.answer(answerTo, error instanceof TurnloomError ? error : TurnloomError.tryAgain(String(error)));
    }
    const tail = this.subjects.tailOf(addressed.message.subject)!;
    const parts: ListAnswer[] = [];
    const ask = async (engineId: string, shards: readonly number[]): Promise<void> => {
      let reply: BusMessage;
      try {
        reply = await this.bus.request(this.subjects.engineRelay(engineId, tail), addressed.message.data, {
          headers: this.relayHeaders(addressed.message, 0, { [SHARDS]: shards.join(',') }),
          timeoutMs: PART_TIMEOUT_MS,
        });
      } catch (error) {
        // Nobody listens for that engine any more (it died before its membership lapsed): its shards are taken here, and this engine answers for them.
        if (!(error instanceof BusError && error.kind === 'no_responders') || engineId === this.placement.engineId) throw error;
        for (const shard of shards) if (!(await this.placement.take(shard, engineId))) throw TurnloomError.tryAgain(`shard ${shard} is changing hands; try again`, { shard });
        return ask(this.placement.engineId, shards);
      }
      const body = decode(reply.data, contentTypeOf(reply.headers, reply.data)) as { result?: Record<string, unknown>; error?: { code: string; message: string; details?: Record<string, unknown> } };
      if (body.error) throw TurnloomError.fromJSON(body.error as Parameters<typeof TurnloomError.fromJSON>[0]);
      parts.push({ result: body.result!, positions: reply.headers[POSITIONS]?.split(',').map(Number) ?? [] });
    };
    try {
      await Promise.all([...owners].map(([engineId, shards]) => ask(engineId, shards)));
    } catch (error) {
      const cause = error instanceof Error ? error.message : String(error);
      return this.answer(answerTo, error instanceof TurnloomError && error.details.retryAfterMs !== undefined ? error : TurnloomError.tryAgain(`an engine did not answer its part of ${method} (${cause}); try again`));
    }
    const result = mergeLists(method, parts, parsed.data.limit, this.replyBudgetBytes);
    this.bus.publish(answerTo, encode({ result }, addressed.contentType), { headers: { 'content-type': addressed.contentType } });
  }

  /** Serves a request through this engine's own relay subject, as a part of a list is. */
  private async relayToSelf(message: BusMessage, answerTo: string): Promise<void> {
    const tail = this.subjects.tailOf(message.subject)!;
    try {
      this.pass(await this.bus.request(this.subjects.engineRelay(this.placement.engineId, tail), message.data, { headers: this.relayHeaders(message, 1), timeoutMs: PART_TIMEOUT_MS }), answerTo);
    } catch (error) {
      this.answer(answerTo, error instanceof TurnloomError ? error : TurnloomError.tryAgain(String(error)));
    }
  }

  /**
   * This engine's part of a list: answered by its own API once it serves
   * every shard named (its copies whole), with each listed thread's position
   * for the merge.
   */
  private async servePart(message: BusMessage, shards: readonly number[], serve: Serve, answerTo: string): Promise<void> {
    if (!(await this.placement.covers(shards))) {
      return this.answer(answerTo, TurnloomError.tryAgain(`shards moved while a list was asked of engine ${this.placement.engineId}; try again`));
    }
    if (!message.subject.endsWith('.thread.list')) return serve(message, answerTo);
    const answer = await this.capture(message, serve);
    if (!answer) return;
    const body = decode(answer.data, contentTypeOf(answer.headers, answer.data)) as { result?: { threads: Array<{ id: string }> } };
    const positions = body.result?.threads.map(({ id }) => this.placement.positionOf(id)) ?? [];
    this.bus.publish(answerTo, answer.data, { headers: { ...answer.headers, [POSITIONS]: positions.join(',') } });
  }

  /** Serves the request with its answer sent to a fresh inbox of this engine's, and resolves with it (`undefined`: none came). */
  private async capture(message: BusMessage, serve: Serve): Promise<BusMessage | undefined> {
    const inbox = this.bus.inbox();
    let delivered: (answer: BusMessage) => void = () => undefined;
    const answered = new Promise<BusMessage>((resolve) => (delivered = resolve));
    const subscription = this.bus.subscribe(inbox, (answer) => delivered(answer));
    let timer: NodeJS.Timeout | undefined;
    try {
      await serve(message, inbox);
      return await Promise.race([answered, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), PART_TIMEOUT_MS)))]);
    } finally {
      clearTimeout(timer);
      subscription.unsubscribe();
    }
  }

  /**
   * Serves the requests addressed to this engine (by a caller that saw it
   * answer for the thread) and those other engines pass on to it, as if
   * they had come on the shared subjects (the caller's reply subject is what
   * the checks of inbox spaces look at).
   */
  serveAddressed(serve: { api: Serve; worker: Serve }): BusSubscription[] {
    const { engineId } = this.placement;
    const serveFor = (subject: string, answerTo: string | undefined) => (routed: BusMessage) => (subject.startsWith(this.subjects.api('')) ? serve.api : serve.worker)(routed, answerTo);
    const direct = (message: BusMessage) => {
      const shared = this.subjects.sharedOf(message.subject, engineId);
      if (shared === undefined) return;
      const routed: BusMessage = { ...message, subject: shared };
      this.routeFrom(routed, serveFor(shared, undefined), 0, message.reply).catch((error: unknown) => this.log.error({ subject: message.subject, error: String(error) }, 'could not serve a request addressed to this engine'));
    };
    const relayed = this.subjects.engineRelay(engineId, '');
    const relay = (message: BusMessage) => {
      const tail = message.subject.slice(relayed.length);
      const { [CALLER_REPLY]: callerReply, [HOPS]: hops, [SHARDS]: shards, ...headers } = message.headers;
      if (!message.reply || !callerReply || !(tail.startsWith('api.') || tail.startsWith('worker.'))) return;
      const routed: BusMessage = { subject: `${this.subjects.prefix}.v1.${tail}`, data: message.data, headers, reply: callerReply };
      const answerTo = message.reply;
      const serving =
        shards === undefined
          ? this.routeFrom(routed, serveFor(routed.subject, answerTo), Number(hops ?? 1), answerTo)
          : this.servePart(routed, shards === '' ? [] : shards.split(',').map(Number), serve.api, answerTo);
      serving.catch((error: unknown) => {
        this.log.error({ subject: routed.subject, error: String(error) }, 'could not serve a request passed on by another engine');
        this.answer(answerTo, TurnloomError.tryAgain(`engine ${engineId} could not serve its part: ${error instanceof Error ? error.message : String(error)}; try again`));
      });
    };
    return [
      this.bus.subscribe(this.subjects.apiAtAll(engineId), direct),
      this.bus.subscribe(this.subjects.workerAtAll(engineId), direct),
      this.bus.subscribe(this.subjects.engineRelayAll(engineId), relay),
    ];
  }
}
