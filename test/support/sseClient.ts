import { type ClientRequest, type IncomingMessage, request } from 'node:http';

export interface SseMessage {
  event: string;
  id: string | null;
  data: unknown;
}

export interface SseStream {
  status: number;
  messages: SseMessage[];
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

/** A plain server-sent-events reader, as a browser's EventSource would read the relay (without its reconnecting). */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const messages: SseMessage[] = [];
    let req: ClientRequest;
    let endedResolve: () => void;
    const ended = new Promise<void>((done) => (endedResolve = done));
    req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (response: IncomingMessage) => {
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map<string, string>();
          for (const line of block.split('\n')) {
            if (line.startsWith(':') || !line.includes(':')) continue;
            const at = line.indexOf(':');
            fields.set(line.slice(0, at), line.slice(at + 1).trimStart());
          }
          if (fields.has('data')) messages.push({ event: fields.get('event') ?? 'message', id: fields.get('id') ?? null, data: JSON.parse(fields.get('data')!) });
        }
      });
      response.on('end', () => endedResolve());
      response.on('close', () => endedResolve());
      resolve({ status: response.statusCode ?? 0, messages, ended, close: () => req.destroy() });
    });
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}
