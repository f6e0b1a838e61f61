import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type WireProtocol = 'anthropic' | 'openai-chat' | 'openai-responses';

/** What the server does for one request, in order; the last plan repeats. */
export type ResponsePlan =
  | {
      kind: 'stream';
      /** One JSON chunk per element, as in `*.chunks.txt`. */
      chunks: string[];
      /** Milliseconds between chunks. */
      delayMs?: number;
      /** Destroy the connection after this many chunks (a reset mid-stream). */
      resetAfter?: number;
      /** Stop sending after this many chunks and keep the connection open (a stall). */
      stallAfter?: number;
      /** Replace chunk `n` with bytes that are not JSON. */
      malformedAt?: number;
    }
  | { kind: 'status'; status: number; headers?: Record<string, string>; body: unknown };

export interface RecordedRequest {
  method: string;
  path: string;
  /** As they arrived (names in lower case): to see which credential a client sent, if any. */
  headers: IncomingHttpHeaders;
  body: unknown;
  /** `performance.now()` when the request's head arrived, and when its answer's last byte was written (`null` until then, or when cut short). */
  receivedAt: number;
  answeredAt: number | null;
}

export interface RecordedStreamServer {
  /** Pass as the SDK's `baseURL` (for OpenAI it ends in `/v1`). */
  baseURL: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Parses a `*.chunks.txt` file: one JSON chunk per non-empty line. */
export function parseChunks(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line, index) => {
      try {
        JSON.parse(line);
      } catch {
        // Never the line itself: a file named by mistake is not printed.
        throw new Error(`line ${index + 1} is not JSON`);
      }
      return line;
    });
}

const terminal: Record<WireProtocol, (chunk: { type?: string }) => boolean> = {
  anthropic: (chunk) => chunk.type === 'message_stop',
  'openai-responses': (chunk) => chunk.type === 'response.completed' || chunk.type === 'response.failed' || chunk.type === 'response.incomplete',
  // Chat Completions has no closing chunk; a recording is one response.
  'openai-chat': () => false,
};

/**
 * Splits a recording into the responses it holds: some recordings capture a
 * whole multi-call exchange, one response per model call, back to back.
 */
export function splitResponses(protocol: WireProtocol, chunks: string[]): string[][] {
  const responses: string[][] = [[]];
  for (const chunk of chunks) {
    responses.at(-1)!.push(chunk);
    if (terminal[protocol](JSON.parse(chunk) as { type?: string })) responses.push([]);
  }
  return responses.filter((response) => response.length > 0);
}

/** How each wire protocol frames one chunk as a server-sent event. */
function frame(protocol: WireProtocol, chunk: string): string {
  if (protocol === 'openai-chat') return `data: ${chunk}\n\n`;
  const type = (JSON.parse(chunk) as { type?: string }).type ?? 'message';
  return `event: ${type}\ndata: ${chunk}\n\n`;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/**
 * A local HTTP server that plays recorded provider streams (or failures) to
 * the real SDK clients, so their own stream parsers run on real bytes.
 * `plans` answer the requests in order (the last one repeats), or one is
 * chosen per request from its body, for a model answering several
 * conversations at once (a parent and its sub-agents).
 */
export async function serveRecordedStream(protocol: WireProtocol, plans: ResponsePlan[] | ((body: unknown, index: number) => ResponsePlan)): Promise<RecordedStreamServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const receivedAt = performance.now();
    void (async () => {
      const body = await readBody(request);
      const recorded: RecordedRequest = { method: request.method ?? 'GET', path: request.url ?? '/', headers: request.headers, body, receivedAt, answeredAt: null };
      requests.push(recorded);
      const plan = typeof plans === 'function' ? plans(body, requests.length - 1) : plans[Math.min(requests.length - 1, plans.length - 1)]!;
      if (plan.kind === 'status') {
        response.writeHead(plan.status, { 'content-type': 'application/json', ...plan.headers });
        response.end(JSON.stringify(plan.body), () => void (recorded.answeredAt = performance.now()));
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      for (const [index, chunk] of plan.chunks.entries()) {
        if (plan.resetAfter === index) {
          response.socket?.destroy();
          return;
        }
        if (plan.stallAfter === index) return; // keep the connection open and say nothing more
        response.write(plan.malformedAt === index ? (protocol === 'openai-chat' ? 'data: {"broken": \n\n' : 'event: broken\ndata: {"broken": \n\n') : frame(protocol, chunk));
        if (plan.delayMs) await new Promise((resolve) => setTimeout(resolve, plan.delayMs));
      }
      if (protocol === 'openai-chat') response.write('data: [DONE]\n\n');
      response.end(() => void (recorded.answeredAt = performance.now()));
    })().catch(() => response.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: protocol === 'anthropic' ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1`,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
