import type { TurnloomConfig } from './configSchema.ts';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Paths (with `*` for any key) whose lists add up instead of replacing:
 * permission rules. Replacing them would let the later file drop the earlier
 * one's `deny` rules, and the project file, which is in the repository the
 * model can edit, must never be able to loosen what the user file says.
 */
const additiveLists: readonly string[][] = [
  ['permissions', 'rules'],
  ['agents', '*', 'rules'],
];

/** Whether the list at `path` adds up across the files (permission rules) rather than being replaced. */
export const additive = (path: readonly string[]): boolean => additiveLists.some((pattern) => pattern.length === path.length && pattern.every((part, index) => part === '*' || part === path[index]));

function merge(base: unknown, over: unknown, path: string[]): unknown {
  if (over === undefined) return base;
  if (Array.isArray(base) && Array.isArray(over) && additive(path)) return [...base, ...over];
  if (!isObject(base) || !isObject(over)) return over;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) merged[key] = merge(base[key], value, [...path, key]);
  return merged;
}

/**
 * `over` laid on `base` (the project file on the user file): objects merge
 * key by key, so a project agent overrides the user's agent of the same
 * name one key at a time; lists are replaced, except permission rules,
 * which are added to the base's. Pure: neither argument is changed.
 */
export function mergeConfigs(base: TurnloomConfig, over: TurnloomConfig): TurnloomConfig {
  return merge(base, over, []) as TurnloomConfig;
}
