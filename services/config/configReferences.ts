import { builtInAgents, builtInProviders, type TurnloomConfig } from './configSchema.ts';
import type { Refusal } from './projectFileLimits.ts';

/**
 * What can only be checked once the files are merged, since one file may
 * name what the other defines: every provider and agent named exists, a
 * new provider says which adapter serves it, a built-in one is not given
 * another kind. Returns the first problem, or `null`.
 */
export function configReferenceProblem(config: TurnloomConfig): Refusal | null {
  const providers = config.providers ?? {};
  for (const [name, provider] of Object.entries(providers)) {
    if (name === 'scripted') {
      const key = (['kind', 'baseUrl', 'apiKeyEnv'] as const).find((candidate) => provider[candidate] !== undefined);
      if (key) return { path: `providers.scripted.${key}`, message: 'the scripted provider calls no server and has no kind; only its model and contextWindow may be set' };
    } else if ((builtInProviders as readonly string[]).includes(name)) {
      if (provider.kind !== undefined && provider.kind !== name) return { path: `providers.${name}.kind`, message: `a built-in provider's kind is its name: leave it out, or give the provider another name` };
    } else if (provider.kind === undefined) {
      return { path: `providers.${name}.kind`, message: `is required for a provider that is not built in (${builtInProviders.join(', ')}): one of anthropic, openai-chat, openai-responses` };
    }
  }
  const known = [...builtInProviders, ...Object.keys(providers).filter((name) => !(builtInProviders as readonly string[]).includes(name))];
  const unknownProvider = (name: string | undefined) => name !== undefined && !known.includes(name);
  if (unknownProvider(config.provider)) return { path: 'provider', message: `no provider "${config.provider}": the providers are ${known.join(', ')}` };
  for (const [name, agent] of Object.entries(config.agents ?? {})) {
    if (unknownProvider(agent.provider)) return { path: `agents.${name}.provider`, message: `no provider "${agent.provider}": the providers are ${known.join(', ')}` };
  }
  const agents = [...builtInAgents, ...Object.keys(config.agents ?? {}).filter((name) => !(builtInAgents as readonly string[]).includes(name))];
  if (config.agent !== undefined && !agents.includes(config.agent)) return { path: 'agent', message: `no agent "${config.agent}": the agents are ${agents.join(', ')}` };
  return null;
}
