import { jsonBytes } from '../../domain/index.ts';
import { encodeCursor } from '../api/paging.ts';

/** One engine's part of a list: its API's answer for the shards it owns, and for threads their positions, in the answer's order. */
export interface ListAnswer {
  result: Record<string, unknown>;
  positions: readonly number[];
}

interface Keyed<T> {
  item: T;
  /** What the list is ordered by: descending positions for threads, ascending keys for approvals. */
  order: number | string;
}

/**
 * The parts of a list merged into the page one engine holding every shard
 * would have answered: the same order, the first `limit` items that fit the
 * budget, and a cursor past the last one when any part had more. A thread
 * answered by two engines (its shard moved between their answers) is listed once.
 */
export function mergeLists(method: 'thread.list' | 'approval.list', parts: readonly ListAnswer[], limit: number, budgetBytes: number): Record<string, unknown> {
  const field = method === 'thread.list' ? 'threads' : 'approvals';
  const before = (a: Keyed<unknown>, b: Keyed<unknown>) => (method === 'thread.list' ? (b.order as number) - (a.order as number) : a.order < b.order ? -1 : a.order > b.order ? 1 : 0);
  const seen = new Set<string>();
  const keyed: Array<Keyed<Record<string, unknown>>> = [];
  // A part that has more ends where its engine stopped: nothing past the earliest such end may be listed yet, or the next page would skip what that engine left out.
  let horizon: Keyed<unknown> | undefined;
  for (const { result, positions } of parts) {
    const items = (result[field] ?? []) as Array<Record<string, unknown>>;
    const own = items.map((item, index): Keyed<Record<string, unknown>> => ({ item, order: method === 'thread.list' ? (positions[index] ?? 0) : `${String(item.threadId)}/${String(item.id)}` }));
    const last = own.at(-1);
    if (result.nextCursor !== null && result.nextCursor !== undefined && last && (!horizon || before(last, horizon) < 0)) horizon = last;
    for (const entry of own) {
      const key = method === 'thread.list' ? String(entry.item.id) : String(entry.order);
      if (seen.has(key)) continue;
      seen.add(key);
      keyed.push(entry);
    }
  }
  keyed.sort(before);
  const page: Array<Keyed<Record<string, unknown>>> = [];
  let bytes = 0;
  for (const entry of keyed) {
    const size = jsonBytes(entry.item);
    if (page.length === limit || (horizon && before(entry, horizon) > 0) || (page.length > 0 && bytes + size > budgetBytes)) break;
    page.push(entry);
    bytes += size;
  }
  const more = page.length < keyed.length || horizon !== undefined;
  const last = page.at(-1);
  return { [field]: page.map(({ item }) => item), nextCursor: more && last ? encodeCursor(method === 'thread.list' ? 'threads' : 'approvals', last.order) : null };
}
