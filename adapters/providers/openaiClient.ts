import OpenAI from 'openai';

export interface OpenAiProviderOptions {
  apiKey?: string;
  /** Any OpenAI-compatible server: Ollama, vLLM, LM Studio, DeepSeek, Groq. */
  baseURL?: string;
  defaultModel: string;
  tools?: import('../../domain/index.ts').ToolExecutor;
}

/** The SDK client both OpenAI adapters use. The runner retries (visibly, with one policy); the SDK must not retry behind its back. */
export function createOpenAiClient(options: OpenAiProviderOptions): OpenAI {
  return new OpenAI({ apiKey: options.apiKey ?? 'unused', ...(options.baseURL ? { baseURL: options.baseURL } : {}), maxRetries: 0 });
}
