import { TurnloomError } from './errors.ts';

/**
 * How deep a value may nest (arrays and objects inside one another) where it
 * is handled: deeper is refused as `invalid_payload`, before the recursion
 * of the encoders and of this rule runs out of stack (a model can write a
 * tool input thousands of brackets deep).
 */
export const MAX_NESTING = 1_000;

/**
 * How deep a command may nest as it comes in: under `MAX_NESTING` by far
 * more than the few levels a stored view puts around what a command
 * carries, so whatever is accepted can always be read back and sent.
 */
export const MAX_COMMAND_NESTING = 256;

/** A UTF-16 surrogate with no partner: not a character, and stored differently by every encoder. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const anySurrogate = /[\uD800-\uDFFF]/;

/** The string with every lone surrogate replaced by U+FFFD; well-formed strings come back as they are. */
export function wellFormedString(text: string): string {
  return anySurrogate.test(text) ? text.replace(loneSurrogate, '\uFFFD') : text;
}

/**
 * turnloom's one Unicode rule, applied to everything that comes in (API
 * payloads, provider output, tool output) before it is stored: lone
 * surrogates become U+FFFD, in values and in object keys. JSON, msgpack and
 * LMDB then all read back exactly what was written. Returns the same object
 * when nothing needed replacing, so the common case copies nothing. A value
 * nested deeper than `maxNesting` is refused (`invalid_payload`).
 */
export function wellFormed<T>(value: T, maxNesting = MAX_NESTING): T {
  return clean(value, maxNesting, 0);
}

function clean<T>(value: T, maxNesting: number, depth: number): T {
  if (typeof value === 'string') return wellFormedString(value) as T;
  if (typeof value !== 'object' || value === null) return value;
  if (depth === maxNesting) throw new TurnloomError('invalid_payload', `nested deeper than ${maxNesting} levels (arrays and objects inside one another): refused`, { maxNesting });
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const next = clean(item, maxNesting, depth + 1);
      if (next !== item) (copy ??= value.slice())[index] = next;
    });
    return (copy ?? value) as T;
  }
  if (isPlainObject(value)) {
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const nextKey = wellFormedString(key);
      const next = clean(item, maxNesting, depth + 1);
      if (next === item && nextKey === key) continue;
      copy ??= { ...value };
      if (nextKey !== key) delete copy[key];
      copy[nextKey] = next;
    }
    return (copy ?? value) as T;
  }
  return value;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
