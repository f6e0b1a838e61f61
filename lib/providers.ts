// `turnloom/providers`: the model providers, on their official SDKs, and the scripted one that answers without a key.
export { AnthropicProvider } from '../adapters/providers/anthropicProvider.ts';
export type { AnthropicProviderOptions } from '../adapters/providers/anthropicProvider.ts';
export { OpenAiChatProvider } from '../adapters/providers/openaiChatProvider.ts';
export { OpenAiResponsesProvider } from '../adapters/providers/openaiResponsesProvider.ts';
export type { OpenAiProviderOptions } from '../adapters/providers/openaiClient.ts';
export { ScriptedProvider } from '../adapters/providers/scriptedProvider.ts';
export type { ScriptInput } from '../adapters/providers/scriptedProvider.ts';
export type { ProviderAdapter, ProviderRequest, ProviderMessage } from '../domain/providerAdapter.ts';
export type { ProviderEvent, ProviderErrorInfo, ProviderErrorKind } from '../domain/providerEvents.ts';
