import { TurnloomError } from '../domain/index.ts';
import { InspectorRelay, type RelayOptions } from '../inspector/index.ts';

/** Starts the inspector's relay; a port it cannot listen on is told in terms of the option the user gave it with. */
export async function startRelay(options: RelayOptions, option: string): Promise<InspectorRelay> {
  try {
    return await new InspectorRelay(options).start();
  } catch (error) {
    if (error instanceof TurnloomError && error.details.portProblem !== undefined) {
      throw new TurnloomError(error.code, `${option} ${options.port}: ${error.message}`, error.details);
    }
    throw error;
  }
}
