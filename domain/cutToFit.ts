/** Bytes of the JSON encoding: the larger of the two a client may ask for, so what fits as JSON fits as msgpack. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

interface Slot {
  parent: Record<string, unknown> | unknown[];
  key: string | number;
  bytes: number;
}

/** Every string and every nested object or array below the root, with its JSON size. */
function slotsOf(root: unknown): { strings: Slot[]; subtrees: Slot[] } {
  const strings: Slot[] = [];
  const subtrees: Slot[] = [];
  const visit = (parent: Record<string, unknown> | unknown[]) => {
    for (const [key, value] of Object.entries(parent)) {
      const slotKey = Array.isArray(parent) ? Number(key) : key;
      if (typeof value === 'string') strings.push({ parent, key: slotKey, bytes: jsonBytes(value) });
      else if (value !== null && typeof value === 'object') {
        subtrees.push({ parent, key: slotKey, bytes: jsonBytes(value) });
        visit(value as Record<string, unknown>);
      }
    }
  };
  if (root !== null && typeof root === 'object') visit(root as Record<string, unknown>);
  return { strings, subtrees };
}

/** Ids, types and names are short and hold the event together: only what is longer than this is ever cut. */
const MIN_CUT_BYTES = 1_024;

const note = (cutChars: number, reason: string) => `\n[… ${cutChars} characters cut here: ${reason}]`;

/** The longest prefix of `text` whose JSON takes at most `budget` bytes, never ending inside a surrogate pair. */
function prefixWithin(text: string, budget: number): string {
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (jsonBytes(text.slice(0, middle)) <= budget) low = middle;
    else high = middle - 1;
  }
  const code = text.charCodeAt(low - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? low - 1 : low);
}

/** The start of `text` and a note saying how much was cut and why, together at most `budget` bytes of JSON (or just the note, if less fits). */
export function cutText(text: string, budget: number, reason: string): string {
  const keep = prefixWithin(text, Math.max(2, budget - jsonBytes(note(text.length, reason))));
  return keep + note(text.length - keep.length, reason);
}

/**
 * The value, shrunk until its JSON takes at most `maxBytes`: its longest
 * strings are cut first, each keeping its start and saying how much was cut;
 * if texts are not enough (a huge object of small values), the largest
 * nested objects are replaced by a note. Nothing under 1 KiB is touched, so
 * ids and types survive (and a value made only of small pieces may stay
 * over). A value that fits comes back as it is, with `cut: false`; the
 * input is never changed.
 */
export function cutToFit<T>(value: T, maxBytes: number): { value: T; cut: boolean } {
  let size = jsonBytes(value);
  if (size <= maxBytes) return { value, cut: false };
  const copy = structuredClone(value);
  const { strings, subtrees } = slotsOf(copy);
  for (const slot of strings.sort((a, b) => b.bytes - a.bytes)) {
    if (size <= maxBytes || slot.bytes < MIN_CUT_BYTES) break;
    const cut = cutText((slot.parent as Record<string | number, string>)[slot.key]!, slot.bytes - (size - maxBytes), `the event was over the ${maxBytes}-byte limit`);
    (slot.parent as Record<string | number, string>)[slot.key] = cut;
    size += jsonBytes(cut) - slot.bytes;
  }
  for (const slot of subtrees.sort((a, b) => b.bytes - a.bytes)) {
    if (size <= maxBytes || slot.bytes < MIN_CUT_BYTES) break;
    const replacement = `[… ${slot.bytes} bytes cut here: the event was over the ${maxBytes}-byte limit]`;
    (slot.parent as Record<string | number, unknown>)[slot.key] = replacement;
    size = jsonBytes(copy);
  }
  return { value: copy, cut: true };
}
