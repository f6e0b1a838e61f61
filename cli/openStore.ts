import { LmdbStore } from '../adapters/lmdbStore.ts';
import { TurnloomError } from '../domain/index.ts';

/**
 * Opens the data folder for a command. The store says what is wrong with a
 * folder in its own `TurnloomError`; anything else LMDB throws on open (a
 * file where the folder should be, no permission) is still the user's
 * folder, not our bug, so it becomes one line too.
 */
export function openStore(dataDir: string, option = '--data'): LmdbStore {
  try {
    return LmdbStore.open(dataDir);
  } catch (error) {
    if (error instanceof TurnloomError) throw error;
    throw new TurnloomError('unavailable', `cannot open the data folder ${dataDir}: ${(error as Error).message}; pass ${option} with a folder this user can write`);
  }
}
