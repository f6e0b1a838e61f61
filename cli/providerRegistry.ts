import { LazyProvider } from '../adapters/providers/lazyProvider.ts';
import { type Script, ScriptedProvider, scriptSchema } from '../adapters/providers/scriptedProvider.ts';
import type { ProviderAdapter, ProviderChoice } from '../domain/index.ts';
import { UsageError, readJsonFile } from './cliErrors.ts';
import { registerSecret } from './redact.ts';

/** Every provider turnloom knows, and what makes each available. */
const knownProviders: Record<string, string> = {
  scripted: 'always there',
  anthropic: 'needs ANTHROPIC_API_KEY',
  'openai-chat': 'needs OPENAI_API_KEY',
  'openai-responses': 'needs OPENAI_API_KEY',
};

/** The one line for a provider name that is not configured here: what the names are, and what each needs. */
export function unknownProvider(command: string, name: string, configured: Record<string, unknown>): string {
  const names = Object.keys(knownProviders);
  if (names.includes(name)) return `${command}: provider "${name}" is not configured: it ${knownProviders[name]} (configured here: ${Object.keys(configured).join(', ')})`;
  const close = names.filter((candidate) => candidate.startsWith(name) || name.startsWith(candidate.split('-')[0]!));
  const hint = close.length > 0 ? `did you mean ${close.join(' or ')}? ` : '';
  return `${command}: no provider "${name}"; ${hint}the providers are ${names.map((known) => `${known} (${knownProviders[known]})`).join(', ')}`;
}

export interface ProviderSetup {
  providers: Record<string, ProviderAdapter>;
  defaultProvider: ProviderChoice;
  /** One line for the console: which providers run and which is the default. */
  summary: string;
}

/** A `--script` file for the scripted provider, checked; every failure is one line. */
export const readScriptFile = (path: string): Script => readJsonFile('--script', path, scriptSchema, { expected: 'a script for the scripted provider (see docs/providers.md)' });

/**
 * The providers this process can run, from the environment. The scripted
 * provider is always there (from `scriptPath`, or its default script). With
 * `ANTHROPIC_API_KEY`, `anthropic`; with `OPENAI_API_KEY`, `openai-chat` and
 * `openai-responses` (`OPENAI_BASE_URL` points them at any compatible
 * server). The default is `TURNLOOM_PROVIDER`, else the first real provider,
 * else scripted; `TURNLOOM_MODEL` picks its model. A provider's SDK is
 * loaded on its first call (together they take a second to import).
 */
export async function providersFromEnvironment(env: NodeJS.ProcessEnv, scriptPath?: string): Promise<ProviderSetup> {
  const script = scriptPath ? readScriptFile(scriptPath) : undefined;
  registerSecret(env.ANTHROPIC_API_KEY);
  registerSecret(env.OPENAI_API_KEY);
  const thinking = env.TURNLOOM_ANTHROPIC_THINKING;
  if (thinking && !(Number.isSafeInteger(Number(thinking)) && Number(thinking) > 0)) {
    throw new UsageError(`TURNLOOM_ANTHROPIC_THINKING must be a whole number of tokens, not "${thinking}"`);
  }
  const providers: Record<string, ProviderAdapter> = { scripted: new ScriptedProvider(script) };
  const models: Record<string, string> = {};
  if (env.ANTHROPIC_API_KEY) {
    models.anthropic = env.TURNLOOM_ANTHROPIC_MODEL ?? 'claude-sonnet-4-5';
    const options = {
      apiKey: env.ANTHROPIC_API_KEY,
      ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
      ...(env.TURNLOOM_ANTHROPIC_THINKING ? { thinkingBudgetTokens: Number(env.TURNLOOM_ANTHROPIC_THINKING), maxTokens: Number(env.TURNLOOM_ANTHROPIC_THINKING) + 8_192 } : {}),
      defaultModel: models.anthropic,
    };
    providers.anthropic = new LazyProvider('anthropic', async () => new (await import('../adapters/providers/anthropicProvider.ts')).AnthropicProvider(options));
  }
  if (env.OPENAI_API_KEY) {
    const options = { apiKey: env.OPENAI_API_KEY, ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}), defaultModel: env.TURNLOOM_OPENAI_MODEL ?? 'gpt-4.1-mini' };
    models['openai-chat'] = options.defaultModel;
    models['openai-responses'] = options.defaultModel;
    providers['openai-chat'] = new LazyProvider('openai-chat', async () => new (await import('../adapters/providers/openaiChatProvider.ts')).OpenAiChatProvider(options));
    providers['openai-responses'] = new LazyProvider('openai-responses', async () => new (await import('../adapters/providers/openaiResponsesProvider.ts')).OpenAiResponsesProvider(options));
  }
  const name = env.TURNLOOM_PROVIDER ?? Object.keys(providers).find((candidate) => candidate !== 'scripted') ?? 'scripted';
  if (!providers[name]) throw new UsageError(unknownProvider('TURNLOOM_PROVIDER', name, providers));
  const defaultProvider: ProviderChoice = { name, model: env.TURNLOOM_MODEL ?? models[name] ?? null };
  return {
    providers,
    defaultProvider,
    summary: `providers: ${Object.keys(providers).join(', ')}; default ${name}${defaultProvider.model ? ` (${defaultProvider.model})` : ''}`,
  };
}
