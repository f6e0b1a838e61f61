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
 * when nothing needed replacing, so the common case copies nothing.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return wellFormedString(value) as T;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, index) => {
      const next = wellFormed(item);
      if (next !== item) (copy ??= value.slice())[index] = next;
    });
    return (copy ?? value) as T;
  }
  if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const nextKey = wellFormedString(key);
      const next = wellFormed(item);
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
