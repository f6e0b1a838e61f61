import { createHash } from 'node:crypto';
import { lifecycleMachines } from '../../machines/index.ts';

/**
 * A hash of the four machine definitions. A persisted actor snapshot taken
 * under other definitions is discarded and the actors are rebuilt from events.
 */
export const machinesVersion: string = createHash('sha256')
  .update(JSON.stringify(Object.values(lifecycleMachines).map(({ machine }) => machine.config)))
  .digest('hex')
  .slice(0, 16);
