import type { IncomingMessage } from 'node:http';

/**
 * The relay answers only for its own address. A page on another site could
 * point a name of its own at 127.0.0.1 (DNS rebinding) and read the relay
 * through it; the `Host` header gives that away.
 */
export function isOwnHost(request: IncomingMessage, port: number): boolean {
  const host = request.headers.host?.toLowerCase();
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

/**
 * A `POST` that changes something must come from the page itself: its own
 * origin (browsers always send `Origin` on a cross-site POST) and a JSON body
 * (which a plain HTML form cannot send, and which needs a preflight the
 * relay never grants).
 */
export function isOwnPost(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${request.headers.host}`) return false;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  return request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}
