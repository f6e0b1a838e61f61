import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { WireProtocol } from '../../adapters/providers/recordedStreamServer.ts';

export const fixturesDir = fileURLToPath(new URL('../fixtures/providers/', import.meta.url));

export const fixtureFiles = (['anthropic', 'openai-chat', 'openai-responses'] as const).flatMap((protocol) =>
  readdirSync(`${fixturesDir}${protocol}`)
    .filter((name) => name.endsWith('.chunks.txt'))
    .map((name) => ({ protocol: protocol as WireProtocol, name, path: `${fixturesDir}${protocol}/${name}` })),
);

export interface Expected {
  text: string;
  reasoning: string;
  toolCalls: Array<{ name: string; input: unknown }>;
  /** Model calls the recording holds, and whether the last one asked for tools. */
  responses: number;
  endsWithToolCalls: boolean;
}

const parse = (json: string) => (json.trim() === '' ? {} : JSON.parse(json));

/**
 * What a fixture says, read straight from its chunks with none of turnloom's
 * code: the oracle the replay must agree with.
 */
export function expectedFrom(protocol: WireProtocol, path: string): Expected {
  // biome-ignore lint: fixtures are loose JSON
  const chunks = readFileSync(path, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as any);
  const out: Expected = { text: '', reasoning: '', toolCalls: [], responses: 1, endsWithToolCalls: false };
  if (protocol === 'anthropic') {
    const tools = new Map<number, { name: string; json: string }>();
    for (const chunk of chunks) {
      if (chunk.type === 'content_block_start' && chunk.content_block.type === 'tool_use') tools.set(chunk.index, { name: chunk.content_block.name, json: '' });
      if (chunk.type !== 'content_block_delta') continue;
      if (chunk.delta.type === 'text_delta') out.text += chunk.delta.text;
      if (chunk.delta.type === 'thinking_delta') out.reasoning += chunk.delta.thinking;
      if (chunk.delta.type === 'input_json_delta') tools.get(chunk.index)!.json += chunk.delta.partial_json;
    }
    out.toolCalls = [...tools.values()].map(({ name, json }) => ({ name, input: parse(json) }));
    out.endsWithToolCalls = chunks.some((chunk) => chunk.type === 'message_delta' && chunk.delta.stop_reason === 'tool_use');
  } else if (protocol === 'openai-chat') {
    const tools = new Map<number, { name: string; json: string }>();
    for (const chunk of chunks) {
      for (const choice of chunk.choices ?? []) {
        out.text += choice.delta?.content ?? '';
        out.reasoning += choice.delta?.reasoning_content ?? '';
        for (const call of choice.delta?.tool_calls ?? []) {
          const known = tools.get(call.index) ?? { name: call.function?.name, json: '' };
          known.json += call.function?.arguments ?? '';
          tools.set(call.index, known);
        }
      }
    }
    out.toolCalls = [...tools.values()].map(({ name, json }) => ({ name, input: parse(json) }));
    out.endsWithToolCalls = tools.size > 0;
  } else {
    out.responses = chunks.filter((chunk) => chunk.type === 'response.created').length;
    let lastHasCalls = false;
    for (const chunk of chunks) {
      if (chunk.type === 'response.created') lastHasCalls = false;
      if (chunk.type === 'response.output_text.delta') out.text += chunk.delta;
      if (chunk.type === 'response.reasoning_summary_text.delta' || chunk.type === 'response.reasoning_text.delta') out.reasoning += chunk.delta;
      if (chunk.type === 'response.output_item.done' && chunk.item.type === 'function_call') {
        out.toolCalls.push({ name: chunk.item.name, input: parse(chunk.item.arguments) });
        lastHasCalls = true;
      }
    }
    out.endsWithToolCalls = lastHasCalls;
  }
  return out;
}
