import { timingSafeEqual } from 'node:crypto';
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
 * A request the page makes itself: from its own origin (a browser always
 * sends `Origin` on a cross-origin POST, and `Sec-Fetch-Site` with every
 * request; another port of 127.0.0.1 is the same site but not the same
 * origin).
 */
export function isOwnOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${request.headers.host}`) return false;
  const site = request.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin' || site === 'none';
}

/**
 * A `POST` that changes something must come from the page itself: its own
 * origin and a JSON body (which a plain HTML form cannot send, and which
 * needs a preflight the relay never grants).
 */
export function isOwnPost(request: IncomingMessage): boolean {
  return isOwnOrigin(request) && request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** Compares in constant time: how much of a guessed key was right never shows in how long the answer took. */
export function sameKey(given: string, key: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(key);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie of a request, if it has it. */
export function cookieOf(request: IncomingMessage, name: string): string | undefined {
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}
