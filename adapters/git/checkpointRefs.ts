/** A turn's tree before its first change or after it, or the whole work tree just before a revert (named by the revert's id). */
export type Which = 'before' | 'after' | 'reverted';

const whiches: readonly string[] = ['before', 'after', 'reverted'];

export const checkpointRefPrefix = 'refs/turnloom/checkpoints/';

/** Loose refs are files: keep every path component well under the usual 255-byte file-name limit. */
const maxComponent = 200;
/** Marks a component continued in the next one; never produced by escaping, so ids split over components stay unambiguous. */
const continued = '+';

/**
 * Ids are arbitrary Unicode, but ref names forbid `.`-prefixed components, `..`, `@{`, controls, spaces and `~^:?*[\`.
 * Escaping every byte outside `[A-Za-z0-9_-]` as `%XX` rules all of that out and decodes with decodeURIComponent.
 */
function encodeId(id: string): string {
  if (id === '') throw new Error('a checkpoint id must not be empty');
  let escaped: string;
  try {
    escaped = encodeURIComponent(id);
  } catch {
    throw new Error(`checkpoint id ${JSON.stringify(id)} is not well-formed Unicode (lone surrogate)`);
  }
  escaped = escaped.replace(/[.!~*'()]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
  const components: string[] = [];
  for (let start = 0; start < escaped.length; start += maxComponent) components.push(escaped.slice(start, start + maxComponent));
  return components.join(`${continued}/`);
}

export function checkpointRefName(threadId: string, turnId: string, which: Which): string {
  return `${checkpointRefPrefix}${encodeId(threadId)}/${encodeId(turnId)}/${which}`;
}

/** The ref prefix (ending in `/`) under which all of one thread's checkpoints live. */
export function threadRefPrefix(threadId: string): string {
  return `${checkpointRefPrefix}${encodeId(threadId)}/`;
}

/** null for refs under the prefix that this module did not write. */
export function parseCheckpointRefName(ref: string): { threadId: string; turnId: string; which: Which } | null {
  if (!ref.startsWith(checkpointRefPrefix)) return null;
  const components = ref.slice(checkpointRefPrefix.length).split('/');
  const which = components.pop();
  if (which === undefined || !whiches.includes(which)) return null;
  const ids: string[] = [];
  let id = '';
  for (const component of components) {
    if (component.endsWith(continued)) {
      id += component.slice(0, -continued.length);
    } else {
      ids.push(id + component);
      id = '';
    }
  }
  if (id !== '' || ids.length !== 2 || !ids.every((escaped) => /^(?:[A-Za-z0-9_-]|%[0-9A-F]{2})+$/.test(escaped))) return null;
  try {
    return { threadId: decodeURIComponent(ids[0]!), turnId: decodeURIComponent(ids[1]!), which: which as Which };
  } catch {
    return null;
  }
}
