import { TurnloomError } from '../domain/index.ts';
import { type LoadedConfig, type TurnloomConfig, loadConfig } from '../services/config/index.ts';
import type { WorkerOptions } from '../services/worker/worker.ts';
import { UsageError } from './cliErrors.ts';
import { registerSecret } from './redact.ts';

/**
 * The configuration files for a command (`loadConfig`: the user file, and
 * `turnloom.json` in `workspace` unless it is `null`). A mistake in one is
 * the user's to fix, so it is a `UsageError`: one line naming the file and
 * the key, exit 2. Values a `${VAR}` brought in are kept out of every line
 * printed from then on.
 */
export function commandConfig(workspace: string | null): LoadedConfig {
  try {
    const loaded = loadConfig({ workspace });
    for (const value of loaded.expanded) registerSecret(value);
    return loaded;
  } catch (error) {
    if (error instanceof TurnloomError && error.code === 'invalid_payload') throw new UsageError(error.message);
    throw error;
  }
}

/**
 * How the worker compacts, from the flag and the configuration: the window
 * is `--context-window`, else the provider's `contextWindow`, else the
 * top-level one (else the model's known window); one process takes one
 * window, so `provider` is the one its turns run on by default.
 */
export function compactionOptions(config: TurnloomConfig, contextWindowFlag: number | null | undefined, provider: string): NonNullable<WorkerOptions['loop']>['compaction'] {
  const contextWindow = contextWindowFlag ?? config.providers?.[provider]?.contextWindow ?? config.contextWindow;
  const { keepRecentTurns, maxPerTurn } = config.compaction ?? {};
  return {
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    ...(keepRecentTurns !== undefined ? { keepRecentTurns } : {}),
    ...(maxPerTurn !== undefined ? { maxPerTurn } : {}),
  };
}
