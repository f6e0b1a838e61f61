import { createHash } from 'node:crypto';
import { lifecycleMachines } from '../../machines/index.ts';

/** Functions as their source, objects by their values: what an action really does, not only its name. */
function describe(value: unknown): unknown {
  if (typeof value === 'function') return [String(value), describe({ ...(value as unknown as Record<string, unknown>) })];
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, describe(inner)]));
  return value;
}

/**
 * A hash of the four machine definitions and of what their named actions do.
 * A persisted actor snapshot taken under other machines is discarded and the
 * actors are rebuilt from events.
 */
export const machinesVersion: string = createHash('sha256')
  .update(JSON.stringify(Object.values(lifecycleMachines).map(({ machine }) => [machine.config, describe(machine.implementations.actions)])))
  .digest('hex')
  .slice(0, 16);
