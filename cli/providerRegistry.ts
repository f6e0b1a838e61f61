import { readFileSync } from 'node:fs';
import { ScriptedProvider, scriptSchema } from '../adapters/providers/scriptedProvider.ts';
import type { ProviderChoice } from '../services/engine/domainEvents.ts';
import type { ProviderAdapter } from '../services/runtime/providerAdapter.ts';

export interface ProviderSetup {
  providers: Record<string, ProviderAdapter>;
  defaultProvider: ProviderChoice;
  /** One line for the console: which providers run and which is the default. */
  summary: string;
}

/**
 * The providers this process can run, from the environment. The scripted
 * provider is always there (from `scriptPath`, or its default script); a
 * real provider becomes the default when its API key is set.
 */
export function providersFromEnvironment(env: NodeJS.ProcessEnv, scriptPath?: string): ProviderSetup {
  const script = scriptPath ? scriptSchema.parse(JSON.parse(readFileSync(scriptPath, 'utf8'))) : undefined;
  const providers: Record<string, ProviderAdapter> = { scripted: new ScriptedProvider(script) };
  const defaultProvider: ProviderChoice = { name: 'scripted', model: null };
  return {
    providers,
    defaultProvider,
    summary: `providers: ${Object.keys(providers).join(', ')}; default ${defaultProvider.name}${defaultProvider.model ? ` (${defaultProvider.model})` : ''}`,
  };
}
