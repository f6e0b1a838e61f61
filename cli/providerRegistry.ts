import { isInstalled } from '../adapters/optionalPackage.ts';
import { anthropicParameters } from '../adapters/providers/anthropicParameters.ts';
import { LazyProvider } from '../adapters/providers/lazyProvider.ts';
import { type Script, ScriptedProvider, scriptSchema } from '../adapters/providers/scriptedProvider.ts';
import type { ProviderAdapter, ProviderChoice } from '../domain/index.ts';
import { type EnvironmentOverride, type ProviderKind, type TurnloomConfig, builtInProviders, providerKinds } from '../services/config/index.ts';
import { UsageError } from './cliErrors.ts';
import { readJsonFile } from './readJsonFile.ts';
import { registerSecret } from './redact.ts';

/** Every provider turnloom knows without configuration, and what makes each available. */
const knownProviders: Record<string, string> = {
  scripted: 'always there',
  anthropic: 'needs ANTHROPIC_API_KEY',
  'openai-chat': 'needs OPENAI_API_KEY, or OPENAI_BASE_URL for a server that takes no key',
  'openai-responses': 'needs OPENAI_API_KEY, or OPENAI_BASE_URL for a server that takes no key',
};

/**
 * The one line for a provider name that is not configured here: what the
 * names are, and what each needs (`needs`: what the configuration says,
 * for providers it defines or points at another key variable).
 */
export function unknownProvider(command: string, name: string, configured: Record<string, unknown>, needs: Record<string, string> = knownProviders): string {
  const names = Object.keys(needs);
  if (names.includes(name)) return `${command}: provider "${name}" is not configured: it ${needs[name]} (configured here: ${Object.keys(configured).join(', ')})`;
  const close = names.filter((candidate) => candidate.startsWith(name) || name.startsWith(candidate.split('-')[0]!));
  const hint = close.length > 0 ? `did you mean ${close.join(' or ')}? ` : '';
  return `${command}: no provider "${name}"; ${hint}the providers are ${names.map((known) => `${known} (${needs[known]})`).join(', ')}`;
}

export interface ProviderSetup {
  providers: Record<string, ProviderAdapter>;
  defaultProvider: ProviderChoice;
  /** One line for the console: which providers run and which is the default. */
  summary: string;
  /** What each provider known here needs to run, for `unknownProvider`. */
  needs: Record<string, string>;
}

/** What the configuration and the command line add to the environment's providers. */
export interface ProviderChoices {
  /** The configuration files' content (`loadConfig`), and the files, to name them in a message. */
  config?: TurnloomConfig;
  files?: string[];
  /** `--provider` and `--model`, and the command that took them: they beat everything else. */
  flags?: { command: string; provider?: string | undefined; model?: string | undefined };
}

const defaultModels: Record<ProviderKind, string> = { anthropic: 'claude-sonnet-4-5', 'openai-chat': 'gpt-4.1-mini', 'openai-responses': 'gpt-4.1-mini' };
/** Each kind's SDK: an optional peer dependency, so a process with a key set but not the SDK is told what to install. */
const sdkPackages: Record<ProviderKind, string> = { anthropic: '@anthropic-ai/sdk', 'openai-chat': 'openai', 'openai-responses': 'openai' };
const defaultKeyVariables: Record<ProviderKind, string> = { anthropic: 'ANTHROPIC_API_KEY', 'openai-chat': 'OPENAI_API_KEY', 'openai-responses': 'OPENAI_API_KEY' };
/** What the environment already said for the built-in providers; it beats the configuration files. */
const environmentBaseUrl: Record<ProviderKind, string> = { anthropic: 'ANTHROPIC_BASE_URL', 'openai-chat': 'OPENAI_BASE_URL', 'openai-responses': 'OPENAI_BASE_URL' };
const environmentModel: Record<ProviderKind, string> = { anthropic: 'TURNLOOM_ANTHROPIC_MODEL', 'openai-chat': 'TURNLOOM_OPENAI_MODEL', 'openai-responses': 'TURNLOOM_OPENAI_MODEL' };

/** The variables set here that beat the configuration files, where they do (as `providersFromEnvironment` reads them): for `turnloom config`. */
export function environmentOverrides(env: NodeJS.ProcessEnv): EnvironmentOverride[] {
  const overrides: EnvironmentOverride[] = [];
  const add = (path: string[], variable: string) => {
    const value = env[variable];
    if (value) overrides.push({ path, variable, value });
  };
  add(['provider'], 'TURNLOOM_PROVIDER');
  add(['model'], 'TURNLOOM_MODEL');
  for (const kind of providerKinds) {
    add(['providers', kind, 'baseUrl'], environmentBaseUrl[kind]);
    add(['providers', kind, 'model'], environmentModel[kind]);
  }
  return overrides;
}

/** A provider the configuration may tune or define, as this process would run it. */
interface ProviderPlan {
  kind: ProviderKind;
  keyVariable: string;
  baseUrl: string | undefined;
  model: string;
}

/**
 * Whether a provider runs with no key: an OpenAI kind pointed at a server
 * other than OpenAI's own (Ollama, llama.cpp, vLLM and LM Studio take none).
 * OpenAI's server always needs one, so it keeps its clear line; Anthropic's
 * SDK has no keyless mode, so anthropic always needs its key.
 */
function keyless(plan: ProviderPlan): boolean {
  if (plan.kind === 'anthropic' || plan.baseUrl === undefined || !URL.canParse(plan.baseUrl)) return false;
  return new URL(plan.baseUrl).hostname !== 'api.openai.com';
}

/** What a provider that does not run here needs, for the line that says so. */
function needsOf(name: string, plan: ProviderPlan): string {
  const key = `needs ${plan.keyVariable}`;
  // With a baseUrl set, only OpenAI's own server (or Anthropic's kind) is left not running: it needs the key.
  if (plan.kind === 'anthropic' || plan.baseUrl !== undefined) return key;
  const builtIn = (providerKinds as readonly string[]).includes(name);
  return `${key}, or ${builtIn ? environmentBaseUrl[plan.kind] : 'a baseUrl'} for a server that takes no key`;
}

function providerPlans(env: NodeJS.ProcessEnv, config: TurnloomConfig): Record<string, ProviderPlan> {
  const configured = config.providers ?? {};
  const names = [...providerKinds, ...Object.keys(configured).filter((name) => !(builtInProviders as readonly string[]).includes(name))];
  return Object.fromEntries(
    names.map((name) => {
      const tuned = configured[name] ?? {};
      const builtIn = (providerKinds as readonly string[]).includes(name);
      // configReferenceProblem made sure a provider that is not built in has its kind.
      const kind = builtIn ? (name as ProviderKind) : tuned.kind!;
      const plan: ProviderPlan = {
        kind,
        keyVariable: tuned.apiKeyEnv ?? defaultKeyVariables[kind],
        baseUrl: (builtIn ? env[environmentBaseUrl[kind]] : undefined) || tuned.baseUrl,
        model: (builtIn ? env[environmentModel[kind]] : undefined) || tuned.model || defaultModels[kind],
      };
      return [name, plan];
    }),
  );
}

/** A `--script` file for the scripted provider, checked; every failure is one line. */
export const readScriptFile = (path: string): Script => readJsonFile('--script', path, scriptSchema, { expected: 'a script for the scripted provider (see docs/providers.md)' });

/**
 * The providers this process can run, from the environment and the
 * configuration files. The scripted provider is always there (from
 * `scriptPath`, or its default script). `anthropic` runs when its key
 * variable is set (`ANTHROPIC_API_KEY`, or the one its `apiKeyEnv` names),
 * `openai-chat` and `openai-responses` likewise (`OPENAI_API_KEY`), and so
 * does every provider the configuration defines with a `kind`. An OpenAI
 * kind pointed at a server other than OpenAI's (`OPENAI_BASE_URL`, or its
 * `baseUrl`) runs without a key too: local servers take none (`keyless`).
 *
 * Where the environment and the files both say something the environment
 * wins (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `TURNLOOM_ANTHROPIC_MODEL`,
 * `TURNLOOM_OPENAI_MODEL` for the built-in providers), and the flags win
 * over both. The default is `--provider`, else `TURNLOOM_PROVIDER`, else the
 * configuration's `provider`, else the first real provider, else scripted;
 * its model is `--model`, else `TURNLOOM_MODEL`, else the configuration's
 * `model` (when that provider is the configuration's), else the provider's.
 * A provider's SDK is loaded on its first call (together they take a second
 * to import). The SDKs are optional peer dependencies: a provider whose key
 * is set but whose SDK is not installed is left out, and is one line saying
 * what to install (a `UsageError`) when it is the one chosen.
 */
export async function providersFromEnvironment(env: NodeJS.ProcessEnv, scriptPath?: string, choices: ProviderChoices = {}): Promise<ProviderSetup> {
  const config = choices.config ?? {};
  const script = scriptPath ? readScriptFile(scriptPath) : undefined;
  const thinking = env.TURNLOOM_ANTHROPIC_THINKING;
  if (thinking && !(Number.isSafeInteger(Number(thinking)) && Number(thinking) > 0)) {
    throw new UsageError(`TURNLOOM_ANTHROPIC_THINKING must be a whole number of tokens, not "${thinking}"`);
  }
  registerSecret(env.ANTHROPIC_API_KEY);
  registerSecret(env.OPENAI_API_KEY);
  const providers: Record<string, ProviderAdapter> = { scripted: new ScriptedProvider(script) };
  const models: Record<string, string> = {};
  const needs: Record<string, string> = { scripted: knownProviders.scripted! };
  /** Providers whose key is set but whose SDK is not installed: what to install, said if one of them is chosen. */
  const uninstalled: Record<string, string> = {};
  /** Providers that run with no key (a local server): said in the summary, so a 401 from a server that wanted one is not a mystery. */
  const unkeyed: string[] = [];
  for (const [name, plan] of Object.entries(providerPlans(env, config))) {
    needs[name] = needsOf(name, plan);
    const apiKey = env[plan.keyVariable] || undefined;
    registerSecret(apiKey);
    if (!apiKey && !keyless(plan)) continue;
    const sdk = sdkPackages[plan.kind];
    if (!isInstalled(sdk)) {
      needs[name] = `needs the "${sdk}" package, not installed here`;
      const install = `npm install ${sdk} (with npx: npx -p turnloom -p ${sdk} turnloom …)`;
      uninstalled[name] = apiKey
        ? `${plan.keyVariable} is set for provider "${name}", but the "${sdk}" package it runs on is not installed: ${install}, or unset ${plan.keyVariable} to use the scripted provider`
        : `provider "${name}" (the server at ${plan.baseUrl}) runs on the "${sdk}" package, which is not installed: ${install}`;
      continue;
    }
    models[name] = plan.model;
    if (!apiKey) unkeyed.push(name);
    const connection = { ...(apiKey ? { apiKey } : {}), ...(plan.baseUrl ? { baseURL: plan.baseUrl } : {}), defaultModel: plan.model };
    switch (plan.kind) {
      case 'anthropic': {
        const options = { ...connection, ...(thinking ? { thinkingBudgetTokens: Number(thinking), maxTokens: Number(thinking) + 8_192 } : {}) };
        providers[name] = new LazyProvider(name, async () => new (await import('../adapters/providers/anthropicProvider.ts')).AnthropicProvider(options), anthropicParameters(options));
        break;
      }
      case 'openai-chat':
        providers[name] = new LazyProvider(name, async () => new (await import('../adapters/providers/openaiChatProvider.ts')).OpenAiChatProvider(connection));
        break;
      case 'openai-responses':
        providers[name] = new LazyProvider(name, async () => new (await import('../adapters/providers/openaiResponsesProvider.ts')).OpenAiResponsesProvider(connection));
        break;
    }
  }
  const { flags } = choices;
  const withoutFlag = env.TURNLOOM_PROVIDER ?? config.provider ?? Object.keys(providers).find((candidate) => candidate !== 'scripted') ?? Object.keys(uninstalled)[0] ?? 'scripted';
  const name = flags?.provider ?? withoutFlag;
  if (uninstalled[name]) throw new UsageError(uninstalled[name]);
  if (!providers[name]) {
    const said = flags?.provider !== undefined ? flags.command : env.TURNLOOM_PROVIDER !== undefined ? 'TURNLOOM_PROVIDER' : `${(choices.files ?? []).join(' + ')}: provider`;
    throw new UsageError(unknownProvider(said, name, providers, needs));
  }
  const configModel = config.model !== undefined && name === (config.provider ?? withoutFlag) ? config.model : undefined;
  const chosenModel = name === withoutFlag ? (env.TURNLOOM_MODEL ?? configModel) : undefined;
  const defaultProvider: ProviderChoice = { name, model: flags?.model ?? chosenModel ?? models[name] ?? null };
  return {
    providers,
    defaultProvider,
    summary: `providers: ${Object.keys(providers).map((known) => (unkeyed.includes(known) ? `${known} (no key)` : known)).join(', ')}; default ${name}${defaultProvider.model ? ` (${defaultProvider.model})` : ''}`,
    needs,
  };
}
