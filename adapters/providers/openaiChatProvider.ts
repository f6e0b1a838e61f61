import type OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { type ProviderAdapter, ProviderError, type ProviderEvent, type ProviderRequest, type StopReason, type ToolExecutor, type Usage } from '../../domain/index.ts';
import { classifyProviderError } from './classifyProviderError.ts';
import { type OpenAiProviderOptions, openAiClient } from './openaiClient.ts';
import { parseToolInput } from './parseToolInput.ts';

/**
 * The Chat Completions request for a canonical one. Reasoning is not sent
 * back: the API takes none (DeepSeek rejects it). Internal: its type is the
 * SDK's, which a program without the SDK installed must not need.
 * @internal
 */
export function toChatParams(request: ProviderRequest, defaultModel: string): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: request.system }];
  for (const message of request.messages) {
    if (message.role === 'user') messages.push({ role: 'user', content: message.text });
    else if (message.role === 'tool') messages.push({ role: 'tool', tool_call_id: message.callId, content: message.output });
    else {
      const text = message.parts.flatMap((part) => (part.kind === 'text' ? [part.text] : [])).join('');
      const calls = message.parts.flatMap((part) =>
        part.kind === 'toolCall' ? [{ id: part.callId, type: 'function' as const, function: { name: part.name, arguments: JSON.stringify(part.input) } }] : [],
      );
      if (text === '' && calls.length === 0) continue;
      messages.push({ role: 'assistant', content: text === '' ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    }
  }
  return {
    model: request.model ?? defaultModel,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools.length > 0
      ? { tools: request.tools.map((tool) => ({ type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } })) }
      : {}),
  };
}

const stopReasons: Record<string, StopReason> = { stop: 'stop', tool_calls: 'toolCalls', function_call: 'toolCalls', length: 'maxTokens', content_filter: 'contentFilter' };

type ChunkUsage = NonNullable<ChatCompletionChunk['usage']> & {
  prompt_cache_hit_tokens?: number;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  prompt_tokens_details?: { cached_tokens?: number } | null;
};

function usageOf(usage: ChunkUsage): Usage {
  return {
    input: usage.prompt_tokens ?? 0,
    output: usage.completion_tokens ?? 0,
    reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    cacheRead: usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0,
    cacheWrite: 0,
  };
}

/**
 * OpenAI Chat Completions streaming, for OpenAI and every compatible server:
 * text, `reasoning_content` (DeepSeek and others), tool-call deltas keyed by
 * index (id and name may only come in the first), finish reasons and usage.
 */
export class OpenAiChatProvider implements ProviderAdapter {
  readonly name = 'openai-chat';
  readonly tools?: ToolExecutor;
  private readonly client: () => Promise<OpenAI>;
  private readonly defaultModel: string;

  constructor(options: OpenAiProviderOptions) {
    this.client = openAiClient('OpenAiChatProvider', options);
    this.defaultModel = options.defaultModel;
    if (options.tools) this.tools = options.tools;
  }

  async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    let stream: AsyncIterable<ChatCompletionChunk>;
    const client = await this.client();
    try {
      stream = await client.chat.completions.create(toChatParams(request, this.defaultModel), { signal });
    } catch (error) {
      throw new ProviderError(classifyProviderError(error));
    }
    let started = false;
    // Each run of reasoning or text is its own segment: they may alternate, and text may follow a tool call.
    const segment: { open: { kind: 'reasoning' | 'text'; id: string } | null; count: number } = { open: null, count: 0 };
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finish: string | null = null;
    let usage: Usage | null = null;
    const close = function* (): Generator<ProviderEvent> {
      if (segment.open) yield { type: 'segment.completed', segmentId: segment.open.id, signature: null };
      segment.open = null;
    };
    try {
      for await (const chunk of stream) {
        if (!started) {
          started = true;
          yield { type: 'turn.started', responseId: chunk.id ?? null, model: chunk.model ?? null };
        }
        const extra = chunk as ChatCompletionChunk & { x_groq?: { usage?: ChunkUsage } };
        const reported = (chunk.usage ?? extra.x_groq?.usage) as ChunkUsage | undefined;
        if (reported) usage = usageOf(reported);
        for (const choice of chunk.choices ?? []) {
          const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null };
          for (const [kind, text] of [
            ['reasoning', delta.reasoning_content],
            ['text', delta.content ?? delta.refusal],
          ] as const) {
            if (!text) continue;
            if (segment.open?.kind !== kind) {
              yield* close();
              segment.open = { kind, id: `${kind}-${++segment.count}` };
              yield { type: 'segment.started', segmentId: segment.open.id, kind };
            }
            yield { type: 'text.delta', segmentId: segment.open.id, text };
          }
          for (const call of delta.tool_calls ?? []) {
            let known = calls.get(call.index);
            if (!known) {
              yield* close();
              known = { id: call.id ?? `call_${call.index}`, name: call.function?.name ?? 'unknown', args: '' };
              calls.set(call.index, known);
              yield { type: 'toolCall.started', callId: known.id, name: known.name };
            }
            const args = call.function?.arguments;
            if (args) {
              known.args += args;
              yield { type: 'toolCall.inputDelta', callId: known.id, text: args };
            }
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        }
      }
    } catch (error) {
      if (signal.aborted) throw error;
      throw new ProviderError(classifyProviderError(error));
    }
    // The SDK ends quietly when aborted; an answer cut short is not a complete one.
    if (signal.aborted) throw new DOMException('aborted', 'AbortError');
    if (finish === null) return;
    yield* close();
    for (const call of [...calls.entries()].sort(([a], [b]) => a - b).map(([, value]) => value)) {
      yield { type: 'toolCall.ready', callId: call.id, input: parseToolInput(call.args) };
    }
    if (usage) yield { type: 'usage', usage };
    yield { type: 'turn.completed', stopReason: stopReasons[finish] ?? 'other', rawReason: finish };
  }
}
