import type OpenAI from 'openai';
import type { ResponseCreateParamsStreaming, ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { type ProviderAdapter, ProviderError, type ProviderEvent, type ProviderRequest, type StopReason, type ToolExecutor, type Usage } from '../../domain/index.ts';
import { classifyProviderError } from './classifyProviderError.ts';
import { type OpenAiProviderOptions, openAiClient } from './openaiClient.ts';
import { parseToolInput } from './parseToolInput.ts';

/**
 * The Responses request for a canonical one: stateless (`store: false`), the
 * whole conversation as input items. Internal: its type is the SDK's, which a
 * program without the SDK installed must not need.
 * @internal
 */
export function toResponsesParams(request: ProviderRequest, defaultModel: string): ResponseCreateParamsStreaming {
  const input: ResponseInputItem[] = [];
  for (const message of request.messages) {
    if (message.role === 'user') input.push({ role: 'user', content: message.text });
    else if (message.role === 'tool') input.push({ type: 'function_call_output', call_id: message.callId, output: message.output });
    else {
      const text = message.parts.flatMap((part) => (part.kind === 'text' ? [part.text] : [])).join('');
      if (text !== '') input.push({ role: 'assistant', content: text });
      for (const part of message.parts) {
        if (part.kind === 'toolCall') input.push({ type: 'function_call', call_id: part.callId, name: part.name, arguments: JSON.stringify(part.input) });
      }
    }
  }
  return {
    model: request.model ?? defaultModel,
    instructions: request.system,
    input,
    stream: true,
    store: false,
    ...(request.tools.length > 0
      ? { tools: request.tools.map((tool) => ({ type: 'function' as const, name: tool.name, description: tool.description, parameters: tool.inputSchema, strict: false })) }
      : {}),
  };
}

interface ResponseUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
  output_tokens_details?: { reasoning_tokens?: number } | null;
}

const usageOf = (usage: ResponseUsage): Usage => ({
  input: usage.input_tokens ?? 0,
  output: usage.output_tokens ?? 0,
  reasoning: usage.output_tokens_details?.reasoning_tokens ?? 0,
  cacheRead: usage.input_tokens_details?.cached_tokens ?? 0,
  cacheWrite: 0,
});

const incompleteReasons: Record<string, StopReason> = { max_output_tokens: 'maxTokens', content_filter: 'contentFilter' };

/**
 * The OpenAI Responses API stream: output text, reasoning (summaries, or
 * reasoning text from compatible servers), function calls and their argument
 * deltas, completion, incompleteness and failures.
 */
export class OpenAiResponsesProvider implements ProviderAdapter {
  readonly name = 'openai-responses';
  readonly tools?: ToolExecutor;
  private readonly client: () => Promise<OpenAI>;
  private readonly defaultModel: string;

  constructor(options: OpenAiProviderOptions) {
    this.client = openAiClient('OpenAiResponsesProvider', options);
    this.defaultModel = options.defaultModel;
    if (options.tools) this.tools = options.tools;
  }

  async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    let stream: AsyncIterable<ResponseStreamEvent>;
    const client = await this.client();
    try {
      stream = await client.responses.create(toResponsesParams(request, this.defaultModel), { signal });
    } catch (error) {
      throw new ProviderError(classifyProviderError(error));
    }
    const openSegments = new Map<string, string>(); // segment id → item id
    const callsByItem = new Map<string, { callId: string; args: string; ready: boolean }>();
    let calledTools = false;
    let finished: ProviderEvent[] | null = null;

    const segment = function* (itemId: string, segmentId: string, kind: 'text' | 'reasoning'): Generator<ProviderEvent> {
      if (openSegments.has(segmentId)) return;
      openSegments.set(segmentId, itemId);
      yield { type: 'segment.started', segmentId, kind };
    };
    const closeItem = function* (itemId: string, signature: string | null): Generator<ProviderEvent> {
      for (const [segmentId, owner] of [...openSegments]) {
        if (owner !== itemId) continue;
        openSegments.delete(segmentId);
        yield { type: 'segment.completed', segmentId, signature };
      }
    };
    const ready = function* (itemId: string, args?: string): Generator<ProviderEvent> {
      const call = callsByItem.get(itemId);
      if (!call || call.ready) return;
      call.ready = true;
      yield { type: 'toolCall.ready', callId: call.callId, input: parseToolInput(args ?? call.args) };
    };

    try {
      for await (const event of stream) {
        switch (event.type) {
          case 'response.created':
            yield { type: 'turn.started', responseId: event.response.id, model: event.response.model ?? null };
            break;
          case 'response.output_item.added':
            if (event.item.type === 'function_call') {
              calledTools = true;
              callsByItem.set(event.item.id ?? event.item.call_id, { callId: event.item.call_id, args: '', ready: false });
              yield { type: 'toolCall.started', callId: event.item.call_id, name: event.item.name };
            }
            break;
          case 'response.output_text.delta':
          case 'response.refusal.delta':
            yield* segment(event.item_id, `${event.item_id}:${event.content_index}`, 'text');
            yield { type: 'text.delta', segmentId: `${event.item_id}:${event.content_index}`, text: event.delta };
            break;
          case 'response.reasoning_summary_text.delta':
            yield* segment(event.item_id, `${event.item_id}:summary:${event.summary_index}`, 'reasoning');
            yield { type: 'text.delta', segmentId: `${event.item_id}:summary:${event.summary_index}`, text: event.delta };
            break;
          case 'response.reasoning_text.delta':
            yield* segment(event.item_id, `${event.item_id}:reasoning:${event.content_index}`, 'reasoning');
            yield { type: 'text.delta', segmentId: `${event.item_id}:reasoning:${event.content_index}`, text: event.delta };
            break;
          case 'response.function_call_arguments.delta': {
            const call = callsByItem.get(event.item_id);
            if (call) {
              call.args += event.delta;
              yield { type: 'toolCall.inputDelta', callId: call.callId, text: event.delta };
            }
            break;
          }
          case 'response.function_call_arguments.done':
            yield* ready(event.item_id, event.arguments);
            break;
          case 'response.output_item.done': {
            const itemId = event.item.id ?? '';
            if (event.item.type === 'function_call') yield* ready(itemId, event.item.arguments);
            const signature = event.item.type === 'reasoning' ? (event.item.encrypted_content ?? null) : null;
            yield* closeItem(itemId, signature);
            break;
          }
          case 'response.completed':
          case 'response.incomplete': {
            const response = event.response;
            const reason = response.incomplete_details?.reason ?? null;
            finished = [
              ...(response.usage ? [{ type: 'usage' as const, usage: usageOf(response.usage) }] : []),
              {
                type: 'turn.completed',
                stopReason: reason ? (incompleteReasons[reason] ?? 'other') : calledTools ? 'toolCalls' : 'stop',
                rawReason: reason ?? response.status ?? null,
              },
            ];
            break;
          }
          case 'response.failed':
            throw new ProviderError(classifyProviderError({ message: event.response.error?.message ?? 'the response failed', code: event.response.error?.code }));
          default:
            break;
        }
      }
    } catch (error) {
      if (signal.aborted || error instanceof ProviderError) throw error;
      throw new ProviderError(classifyProviderError(error));
    }
    if (signal.aborted) throw new DOMException('aborted', 'AbortError');
    if (!finished) return;
    for (const itemId of new Set(openSegments.values())) yield* closeItem(itemId, null);
    for (const itemId of callsByItem.keys()) yield* ready(itemId);
    yield* finished;
  }
}
