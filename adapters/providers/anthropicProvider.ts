import type Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageCreateParamsStreaming, MessageParam, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { type ProviderAdapter, ProviderError, type ProviderEvent, type ProviderRequest, type StopReason, type ToolExecutor, type Usage } from '../../domain/index.ts';
import { classifyProviderError } from './classifyProviderError.ts';
import { parseToolInput } from './parseToolInput.ts';
import { anthropicParameters } from './anthropicParameters.ts';
import { requirePackages } from '../optionalPackage.ts';

export interface AnthropicProviderOptions {
  apiKey?: string;
  baseURL?: string;
  defaultModel: string;
  maxTokens?: number;
  /** Extended thinking with this many tokens of budget (below `maxTokens`); off when left out. */
  thinkingBudgetTokens?: number;
  tools?: ToolExecutor;
}

/**
 * The Messages request for a canonical one. Thinking goes back with its
 * signature (the API requires it to continue a tool-using turn); consecutive
 * tool results travel together in one user message. Internal: its type is
 * the SDK's, which a program without the SDK installed must not need.
 * @internal
 */
export function toMessagesParams(request: ProviderRequest, defaultModel: string, maxTokens: number, thinkingBudgetTokens?: number): MessageCreateParamsStreaming {
  const messages: MessageParam[] = [];
  for (const message of request.messages) {
    if (message.role === 'user') {
      messages.push({ role: 'user', content: message.text });
    } else if (message.role === 'tool') {
      const result: ContentBlockParam = { type: 'tool_result', tool_use_id: message.callId, content: message.output, ...(message.isError ? { is_error: true } : {}) };
      const previous = messages.at(-1);
      if (previous?.role === 'user' && Array.isArray(previous.content) && previous.content.every((block) => block.type === 'tool_result')) previous.content.push(result);
      else messages.push({ role: 'user', content: [result] });
    } else {
      const content: ContentBlockParam[] = message.parts.flatMap((part): ContentBlockParam[] => {
        if (part.kind === 'text') return [{ type: 'text', text: part.text }];
        if (part.kind === 'reasoning') {
          if (!part.signature) return [];
          return part.text === '' ? [{ type: 'redacted_thinking', data: part.signature }] : [{ type: 'thinking', thinking: part.text, signature: part.signature }];
        }
        return [{ type: 'tool_use', id: part.callId, name: part.name, input: part.input as Record<string, unknown> }];
      });
      if (content.length > 0) messages.push({ role: 'assistant', content });
    }
  }
  return {
    model: request.model ?? defaultModel,
    max_tokens: maxTokens,
    system: request.system,
    messages,
    stream: true,
    ...(thinkingBudgetTokens ? { thinking: { type: 'enabled' as const, budget_tokens: thinkingBudgetTokens } } : {}),
    ...(request.tools.length > 0
      ? { tools: request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: { type: 'object' as const, ...tool.inputSchema } })) }
      : {}),
  };
}

const stopReasons: Record<string, StopReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  tool_use: 'toolCalls',
  max_tokens: 'maxTokens',
  model_context_window_exceeded: 'maxTokens',
  refusal: 'refusal',
  pause_turn: 'other',
};

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/**
 * Anthropic Messages streaming: text, thinking with its signature, `tool_use`
 * with `input_json_delta` (including none at all), stop reasons including
 * `refusal` and `max_tokens`, and usage, whose input count may be corrected
 * in `message_delta`.
 */
export class AnthropicProvider implements ProviderAdapter {
  readonly name = 'anthropic';
  readonly tools?: ToolExecutor;
  readonly parameters: Readonly<Record<string, number>>;
  /** The SDK is an optional peer dependency: checked for at construction and imported from then on, so a first call does not spend its idle timeout loading it. */
  private client: Promise<Anthropic>;
  private readonly connection: { apiKey: string; baseURL?: string };
  private readonly defaultModel: string;
  private readonly maxTokens: number;
  private readonly thinkingBudgetTokens: number | undefined;

  constructor(options: AnthropicProviderOptions) {
    requirePackages('AnthropicProvider', ['@anthropic-ai/sdk']);
    this.connection = { apiKey: options.apiKey ?? 'unused', ...(options.baseURL ? { baseURL: options.baseURL } : {}) };
    this.client = this.loadClient();
    // Met (and tried again) by the call that needs it.
    this.client.catch(() => undefined);
    this.defaultModel = options.defaultModel;
    this.maxTokens = options.maxTokens ?? 8_192;
    this.thinkingBudgetTokens = options.thinkingBudgetTokens;
    this.parameters = anthropicParameters(options);
    if (options.tools) this.tools = options.tools;
  }

  private loadClient(): Promise<Anthropic> {
    return import('@anthropic-ai/sdk').then(({ default: Anthropic }) => new Anthropic({ ...this.connection, maxRetries: 0 }));
  }

  /** The SDK's client; a failed import is tried again. */
  private sdkClient(): Promise<Anthropic> {
    return this.client.catch(() => (this.client = this.loadClient()));
  }

  async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    let stream: AsyncIterable<RawMessageStreamEvent>;
    const client = await this.sdkClient();
    try {
      stream = await client.messages.create(toMessagesParams(request, this.defaultModel, this.maxTokens, this.thinkingBudgetTokens), { signal });
    } catch (error) {
      throw new ProviderError(classifyProviderError(error));
    }
    const blocks = new Map<number, { kind: 'text' | 'reasoning' | 'tool'; id: string; json: string; signature: string | null }>();
    const usage: Usage = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0 };
    const count = (reported: AnthropicUsage | null | undefined) => {
      if (!reported) return;
      if (reported.input_tokens != null) usage.input = reported.input_tokens;
      if (reported.output_tokens != null) usage.output = reported.output_tokens;
      if (reported.cache_read_input_tokens != null) usage.cacheRead = reported.cache_read_input_tokens;
      if (reported.cache_creation_input_tokens != null) usage.cacheWrite = reported.cache_creation_input_tokens;
    };
    let stop: string | null = null;
    let stopped = false;
    try {
      for await (const event of stream) {
        switch (event.type) {
          case 'message_start':
            count(event.message.usage);
            yield { type: 'turn.started', responseId: event.message.id, model: event.message.model };
            break;
          case 'content_block_start': {
            const block = event.content_block;
            const segmentId = String(event.index);
            if (block.type === 'text' || block.type === 'thinking' || block.type === 'redacted_thinking') {
              const kind = block.type === 'text' ? 'text' : 'reasoning';
              blocks.set(event.index, { kind, id: segmentId, json: '', signature: block.type === 'redacted_thinking' ? block.data : null });
              yield { type: 'segment.started', segmentId, kind };
              if (block.type === 'text' && block.text) yield { type: 'text.delta', segmentId, text: block.text };
            } else if (block.type === 'tool_use') {
              blocks.set(event.index, { kind: 'tool', id: block.id, json: '', signature: null });
              yield { type: 'toolCall.started', callId: block.id, name: block.name };
            }
            break;
          }
          case 'content_block_delta': {
            const block = blocks.get(event.index);
            if (!block) break;
            const delta = event.delta;
            if (delta.type === 'text_delta') yield { type: 'text.delta', segmentId: block.id, text: delta.text };
            else if (delta.type === 'thinking_delta') yield { type: 'text.delta', segmentId: block.id, text: delta.thinking };
            else if (delta.type === 'signature_delta') block.signature = (block.signature ?? '') + delta.signature;
            else if (delta.type === 'input_json_delta') {
              block.json += delta.partial_json;
              if (delta.partial_json) yield { type: 'toolCall.inputDelta', callId: block.id, text: delta.partial_json };
            }
            break;
          }
          case 'content_block_stop': {
            const block = blocks.get(event.index);
            if (!block) break;
            if (block.kind === 'tool') yield { type: 'toolCall.ready', callId: block.id, input: parseToolInput(block.json) };
            else yield { type: 'segment.completed', segmentId: block.id, signature: block.signature };
            break;
          }
          case 'message_delta':
            count(event.usage);
            stop = event.delta.stop_reason ?? stop;
            break;
          case 'message_stop':
            stopped = true;
            break;
        }
      }
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ProviderError(classifyProviderError(error));
    }
    if (signal.aborted) throw new DOMException('aborted', 'AbortError');
    if (!stopped) return;
    yield { type: 'usage', usage };
    yield { type: 'turn.completed', stopReason: stop ? (stopReasons[stop] ?? 'other') : 'stop', rawReason: stop };
  }
}
