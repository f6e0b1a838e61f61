import { TurnloomError, jsonBytes } from '../../domain/index.ts';

/**
 * Cursors are opaque to clients: a kind and a position, base64url. A cursor of
 * another kind, or not one at all, is refused rather than guessed at.
 */
export function encodeCursor(kind: string, position: string | number): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

const forged = (kind: string, cursor: string) =>
  new TurnloomError('invalid_payload', `cursor "${cursor.slice(0, 40)}" is not a ${kind} cursor this server gave out`, { cursor: cursor.slice(0, 200) });

export function decodeCursor(kind: string, cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString();
  if (!text.startsWith(`${kind}:`)) throw forged(kind, cursor);
  return text.slice(kind.length + 1);
}

/** A cursor whose position is a count or a sequence number. */
export function decodePosition(kind: string, cursor: string): number {
  const position = Number(decodeCursor(kind, cursor));
  if (!Number.isSafeInteger(position) || position < 0) throw forged(kind, cursor);
  return position;
}

/**
 * Takes items in order while they fit: at most `limit`, and within `budget`
 * bytes (the first item always goes, so a page is never empty while items
 * remain). `more` is true when an item was left for the next page.
 */
export function takePage<T>(items: Iterable<T>, limit: number, budget: number, size: (item: T) => number = jsonBytes): { page: T[]; more: boolean } {
  const page: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const itemBytes = size(item);
    if (page.length === limit || (page.length > 0 && bytes + itemBytes > budget)) return { page, more: true };
    page.push(item);
    bytes += itemBytes;
  }
  return { page, more: false };
}
