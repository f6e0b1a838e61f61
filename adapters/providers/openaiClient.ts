import type OpenAI from 'openai';
import { requirePackages } from '../optionalPackage.ts';

export interface OpenAiProviderOptions {
  /** Left out for a server that takes no key (Ollama, llama.cpp, vLLM, LM Studio): no Authorization header is sent. */
  apiKey?: string;
  /** Any OpenAI-compatible server: Ollama, vLLM, LM Studio, DeepSeek, Groq. */
  baseURL?: string;
  defaultModel: string;
  tools?: import('../../domain/index.ts').ToolExecutor;
}

/**
 * The SDK client both OpenAI adapters use. The SDK is an optional peer
 * dependency: that it is installed is checked here, at once, and it is
 * imported from here on, so that a first call does not spend its idle
 * timeout loading it (a failed import is tried again on the next call). The
 * runner retries (visibly, with one policy); the SDK must not retry behind
 * its back. Without a key the SDK refuses to start, so it is given a
 * placeholder and told to send no Authorization header at all (its
 * documented way: the header set to `null`), so a keyless server sees no
 * made-up credential.
 * @internal
 */
export function openAiClient(adapter: string, options: OpenAiProviderOptions): () => Promise<OpenAI> {
  requirePackages(adapter, ['openai']);
  const load = () =>
    import('openai').then(
      ({ default: OpenAI }) =>
        new OpenAI({
          ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : { apiKey: 'no-key', defaultHeaders: { Authorization: null } }),
          ...(options.baseURL ? { baseURL: options.baseURL } : {}),
          maxRetries: 0,
        }),
    );
  let client = load();
  // Met (and tried again) by the call that needs it.
  client.catch(() => undefined);
  return () => client.catch(() => (client = load()));
}
