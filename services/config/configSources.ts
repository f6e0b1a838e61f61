import { z } from 'zod';
import { configSchema } from './configSchema.ts';
import type { ConfigLayer } from './loadConfig.ts';
import { additive } from './mergeConfigs.ts';

/** Where a value of the configuration in effect came from. */
export type ConfigSource = { kind: 'default' } | { kind: 'user' | 'project'; file: string } | { kind: 'environment'; variable: string };

/** One leaf of the configuration in effect: a value that is not an object, or one permission rule. */
export interface ConfigValue {
  path: string[];
  value: unknown;
  source: ConfigSource;
}

/** An environment variable that beats the files at `path` (OPENAI_BASE_URL for `providers.openai-chat.baseUrl`), with its value. */
export interface EnvironmentOverride {
  path: string[];
  variable: string;
  value: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const key = (path: readonly string[]) => JSON.stringify(path);
/** Whether `outer` is a strict prefix of `inner`. */
const within = (outer: readonly string[], inner: readonly string[]) => outer.length < inner.length && outer.every((part, index) => part === inner[index]);

/** The keys whose default is a value (`meta({ default })`), outside records: the ones in effect when no file sets them. */
function schemaDefaults(): ConfigValue[] {
  const found: ConfigValue[] = [];
  const walk = (schema: { properties?: Record<string, unknown>; default?: unknown }, path: string[]) => {
    if (schema.default !== undefined && path.length > 0) found.push({ path, value: schema.default, source: { kind: 'default' } });
    for (const [name, inner] of Object.entries(schema.properties ?? {})) walk(inner as typeof schema, [...path, name]);
  };
  walk(z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Parameters<typeof walk>[0], []);
  return found;
}

/** A file's leaves: objects opened key by key, lists whole, except lists that add up (permission rules), opened rule by rule. */
function leaves(value: unknown, path: string[], visit: (path: string[], value: unknown) => void): void {
  if (isObject(value)) for (const [name, inner] of Object.entries(value)) leaves(inner, [...path, name], visit);
  else if (Array.isArray(value) && additive(path)) value.forEach((item, index) => visit([...path, String(index)], item));
  else visit(path, value);
}

/**
 * The configuration in effect, leaf by leaf, each with where it came from:
 * the defaults, under the user file, under the project file (a later file's
 * leaf replaces an earlier one's; permission rules add up, numbered on), under
 * the environment. The values are as the files wrote them (`${VAR}`s
 * unexpanded): whoever shows them decides what to hide.
 */
export function configSources(layers: readonly ConfigLayer[], overrides: readonly EnvironmentOverride[] = []): ConfigValue[] {
  const values = new Map<string, ConfigValue>(schemaDefaults().map((value) => [key(value.path), value]));
  for (const layer of layers) {
    // Rules add up: each file's are numbered after the earlier files'.
    const offsets = new Map<string, number>();
    leaves(layer.config, [], (path, value) => {
      const list = path.slice(0, -1);
      let at = path;
      if (additive(list)) {
        if (!offsets.has(key(list))) offsets.set(key(list), [...values.values()].filter((earlier) => key(earlier.path.slice(0, -1)) === key(list)).length);
        at = [...list, String(offsets.get(key(list))! + Number(path.at(-1)))];
      }
      // A value here replaces what an earlier layer had beneath it or above it (a default `compaction.auto` under a `compaction` that is not an object).
      for (const [existing, earlier] of values) if (within(earlier.path, at) || within(at, earlier.path)) values.delete(existing);
      values.set(key(at), { path: at, value, source: { kind: layer.source, file: layer.file } });
    });
  }
  for (const { path, variable, value } of overrides) values.set(key(path), { path, value, source: { kind: 'environment', variable } });
  return [...values.values()].sort((a, b) => a.path.join('.').localeCompare(b.path.join('.'), 'en', { numeric: true }));
}
