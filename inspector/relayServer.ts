import { randomBytes } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Bus, type Logger, TurnloomError, errorFields, silentLogger } from '../domain/index.ts';
import { idPattern } from '../bus/index.ts';
import { TurnloomClient } from '../client/index.ts';
import type { ApiMethod } from '../protocol/index.ts';
import { layoutCharts } from './chartLayout.ts';
import { readPageFile } from './pageFiles.ts';
import { cookieOf, isOwnHost, isOwnOrigin, isOwnPost, sameKey } from './requestGuards.ts';
import { type StreamMessage, ThreadStream } from './threadStream.ts';

export interface RelayOptions {
  bus: Bus;
  prefix?: string;
  /** The API token the page's calls carry: what it may do is what the page offers (starting turns and reverting need `operate`, answering approvals `approve`). */
  token?: string;
  /** 0 picks a free port. */
  port: number;
  /**
   * The page's key (default: a new random one at every start). Only a
   * browser that opened the page with it (`pageUrl`) holds the cookie every
   * other request needs; a relay started again with the same key keeps the
   * pages it served working.
   */
  key?: string;
  /** Where a request that failed, or a malformed message, is reported (default: nowhere). */
  log?: Logger;
}

const keyPattern = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * What the page may ask of the API: reads, who its token is, starting a
 * thread and its turns, answering, stopping and undoing what it shows. The
 * API still checks each call against the relay's token (`operate` to start
 * or revert, `approve` to answer); nothing here grants a scope.
 */
const pageMethods = new Set<ApiMethod>([
  'thread.list',
  'thread.get',
  'thread.turns',
  'thread.events',
  'thread.create',
  'turn.start',
  'turn.interrupt',
  'approval.list',
  'approval.respond',
  'worker.list',
  'checkpoint.list',
  'checkpoint.diff',
  'checkpoint.revert',
  'auth.whoami',
  'health',
]);

const MAX_BODY_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}

const errorBody = (code: string, message: string) => ({ error: { code, message, details: {} } });

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new TurnloomError('invalid_payload', `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new TurnloomError('invalid_payload', 'the body is not JSON');
  }
}

/** One server-sent event; `id` is the thread sequence, which the browser sends back as Last-Event-ID when it reconnects. */
function frame(message: StreamMessage): string {
  const { kind, ...rest } = message;
  const data = kind === 'event' ? message.event : kind === 'live' ? message.deltas : kind === 'inspect' ? message.inspection : rest;
  const id = kind === 'event' ? `id: ${message.event.threadSeq}\n` : '';
  return `event: ${kind}\n${id}data: ${JSON.stringify(data)}\n\n`;
}

/** Where a stream starts: the browser's Last-Event-ID when it reconnects, else `?after=`. */
function startSeq(request: IncomingMessage, url: URL): number | undefined {
  const raw = request.headers['last-event-id'] ?? url.searchParams.get('after') ?? '0';
  const value = Number(raw);
  return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * The inspector's local web server: the page and its assets, the four charts
 * laid out, the API for the page (with the relay's token), and one live
 * stream per open thread. Bound to 127.0.0.1, and to the one browser that
 * opened `pageUrl`; see docs/inspector.md.
 */
export class InspectorRelay {
  private readonly options: RelayOptions;
  private readonly client: TurnloomClient;
  /**
   * The secret a request must show (as the page's cookie) before the relay
   * lends it its token. Any local process, or another local user, can reach
   * 127.0.0.1 and read the page itself, so nothing in the page can be the
   * secret: only the address printed for the person who started the relay.
   */
  readonly key: string;
  /** Open page streams, each ended cleanly on stop so a browser reconnects instead of reporting a broken response. */
  private readonly streams = new Map<ThreadStream, ServerResponse>();
  private server: Server | undefined;
  private charts: string | undefined;
  port = 0;

  constructor(options: RelayOptions) {
    this.options = options;
    if (options.key !== undefined && !keyPattern.test(options.key)) throw new TurnloomError('invalid_payload', `an inspector key is 16-128 letters, digits, "_" or "-"`);
    this.key = options.key ?? randomBytes(24).toString('base64url');
    this.client = new TurnloomClient(options.bus, { ...(options.prefix ? { prefix: options.prefix } : {}), ...(options.token ? { token: options.token } : {}) });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  /** Where a person opens the page: its key rides along once, and the first load trades it for the page's cookie. */
  get pageUrl(): string {
    return `${this.url}?key=${this.key}`;
  }

  /** Cookies do not tell ports apart: one name per relay, so two relays on one machine do not overwrite each other's. */
  private get cookieName(): string {
    return `turnloom_inspector_${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((request, response) => {
      this.route(request, response).catch((error: unknown) => {
        (this.options.log ?? silentLogger).error({ ...errorFields(error), url: request.url }, 'inspect: a request failed');
        if (!response.headersSent) sendJson(response, 500, errorBody('internal', 'the relay failed to answer'));
        else response.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') throw new TurnloomError('unavailable', `port ${this.options.port} on 127.0.0.1 is taken; choose another (0 picks a free one)`, { port: this.options.port, portProblem: 'taken' });
      if (error.code === 'EACCES') throw new TurnloomError('unavailable', `port ${this.options.port} needs privileges; choose one above 1023`, { port: this.options.port, portProblem: 'privileged' });
      throw error;
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const [stream, response] of this.streams) {
      stream.close();
      response.end();
    }
    this.streams.clear();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private async route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!isOwnHost(request, this.port)) return sendJson(response, 403, errorBody('forbidden', 'this relay answers only on its own address (127.0.0.1)'));
    const url = new URL(request.url ?? '/', this.url);
    const path = url.pathname;
    const reading = request.method === 'GET' || request.method === 'HEAD';
    const page = path === '/' || /^\/threads\/[^/]+$/.test(path);
    if (reading && page && url.searchParams.has('key')) return this.admit(response, url);
    const held = cookieOf(request, this.cookieName);
    if (held === undefined) return sendJson(response, 401, errorBody('unauthorized', 'open the inspector at the address turnloom printed (with its ?key=…): only that page may use this relay'));
    if (!sameKey(held, this.key)) return sendJson(response, 403, errorBody('forbidden', 'this page was opened with another key (the relay restarted?): open the address turnloom printed'));
    if (request.method === 'POST' && path.startsWith('/api/')) return this.callApi(request, response, path.slice('/api/'.length));
    if (!reading) return sendJson(response, 405, errorBody('invalid_payload', `${request.method} is not served here`));
    if (page) return this.sendFile(response, 'index.html');
    if (path.startsWith('/assets/')) return this.sendFile(response, path.slice('/assets/'.length));
    if (path === '/charts.json') {
      this.charts ??= JSON.stringify({ machines: layoutCharts(), fitted: layoutCharts('fitted') });
      response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' });
      response.end(this.charts);
      return;
    }
    const stream = /^\/stream\/threads\/([^/]+)$/.exec(path);
    if (stream && !isOwnOrigin(request)) return sendJson(response, 403, errorBody('forbidden', 'only the inspector page may follow a thread here'));
    if (stream) return this.openStream(request, response, url, decodeURIComponent(stream[1]!));
    sendJson(response, 404, errorBody('not_found', `nothing at ${path}`));
  }

  /** The page opened with the printed address: a right key becomes the page's cookie, and the key leaves the address bar. */
  private admit(response: ServerResponse, url: URL): void {
    if (!sameKey(url.searchParams.get('key') ?? '', this.key)) return sendJson(response, 403, errorBody('forbidden', 'wrong key: open the address turnloom printed'));
    url.searchParams.delete('key');
    response.writeHead(303, {
      location: `${url.pathname}${url.search}`,
      'set-cookie': `${this.cookieName}=${this.key}; HttpOnly; SameSite=Strict; Path=/`,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    });
    response.end();
  }

  private async sendFile(response: ServerResponse, name: string): Promise<void> {
    const file = await readPageFile(name);
    if (!file) return sendJson(response, 404, errorBody('not_found', `no page file ${name}`));
    response.writeHead(200, { 'content-type': file.contentType, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    response.end(file.body);
  }

  private async callApi(request: IncomingMessage, response: ServerResponse, method: string): Promise<void> {
    if (!isOwnPost(request)) return sendJson(response, 403, errorBody('forbidden', 'only the inspector page may call the API here (same origin, JSON body)'));
    if (!pageMethods.has(method as ApiMethod)) return sendJson(response, 404, errorBody('not_found', `the page may not call "${method}"`));
    try {
      const params = await readBody(request);
      sendJson(response, 200, { result: await this.client.call(method as ApiMethod, params as never) });
    } catch (error) {
      const body = error instanceof TurnloomError ? error.toJSON() : { code: 'internal', message: String(error), details: {} };
      sendJson(response, 200, { error: body });
    }
  }

  private async openStream(request: IncomingMessage, response: ServerResponse, url: URL, threadId: string): Promise<void> {
    const after = startSeq(request, url);
    if (!idPattern.test(threadId) || after === undefined) {
      return sendJson(response, 400, errorBody('invalid_payload', 'a stream needs a thread id of 1-128 letters, digits, "_" or "-" and a whole number after= (or Last-Event-ID)'));
    }
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    response.write('retry: 1000\n\n');
    const sink = (message: StreamMessage): Promise<void> => {
      if (response.destroyed) return Promise.resolve();
      if (message.kind === 'failed') {
        // The page closes its EventSource on this; the stream is over either way.
        response.end(frame(message));
        return Promise.resolve();
      }
      if (response.write(frame(message))) return Promise.resolve();
      return new Promise((resolve) => {
        const done = () => {
          response.off('drain', done);
          response.off('close', done);
          resolve();
        };
        response.on('drain', done);
        response.on('close', done);
      });
    };
    const stream = new ThreadStream(this.client, threadId, after, sink, this.options.log ?? silentLogger);
    const heartbeat = setInterval(() => response.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    this.streams.set(stream, response);
    response.on('close', () => {
      clearInterval(heartbeat);
      stream.close();
      this.streams.delete(stream);
    });
    await stream.start();
  }
}
