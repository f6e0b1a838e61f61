import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type ProviderAdapter, ProviderError, type ProviderEvent, type ProviderRequest, type SideTaskKind, type ToolCall, type ToolExecutor, type ToolResult } from '../../domain/index.ts';
import { scriptedSideAnswer } from './scriptedSideWork.ts';

const usage = z.object({ input: z.number().int().min(0), output: z.number().int().min(0), reasoning: z.number().int().min(0), cacheRead: z.number().int().min(0), cacheWrite: z.number().int().min(0) }).partial().strict();

/** One thing the scripted model does, in order, within a step. */
const scriptItem = z.union([
  z.object({ text: z.string() }).strict(),
  z.object({ reasoning: z.string(), signature: z.string().optional() }).strict(),
  z
    .object({
      toolCall: z
        .object({
          name: z.string().min(1),
          input: z.record(z.string(), z.unknown()).default({}),
          /** A canned result: the call does not run a real tool. Left out (and no `error`), the workspace's tool runs it. */
          result: z.string().optional(),
          /** A canned failure instead. */
          error: z.string().optional(),
          /** A canned call counts as a command (which asks first under the default mode) rather than a read. */
          approval: z.boolean().default(false),
          /** How long the tool runs, in ms. */
          durationMs: z.number().int().min(0).max(600_000).default(0),
        })
        .strict(),
    })
    .strict(),
  z.object({ wait: z.number().int().min(0).max(600_000) }).strict(),
  z
    .object({
      error: z
        .object({
          kind: z.enum(['rateLimit', 'overloaded', 'connection', 'contextOverflow', 'authentication', 'invalidRequest', 'quotaExceeded', 'server']),
          message: z.string().default('scripted failure'),
          status: z.number().int().nullable().default(null),
          retryAfterMs: z.number().int().min(0).nullable().default(null),
        })
        .strict(),
      /** Fail only the first this-many attempts of the step, then carry on past this item. */
      times: z.number().int().min(1).optional(),
    })
    .strict(),
  z.object({ usage }).strict(),
]);

export const scriptSchema = z
  .object({
    model: z.string().default('scripted-1'),
    /** Characters per text delta. */
    chunkSize: z.number().int().min(1).default(16),
    /** Pause between deltas, in ms. */
    delayMs: z.number().int().min(0).default(0),
    /** One list of items per model call; the turn's n-th call plays `steps[n-1]` (the last repeats). */
    steps: z.array(z.array(scriptItem)).min(1),
    /** What side work's calls play (a title, a turn's summary); left out, a line made from the call's input. */
    sideWork: z.object({ title: z.array(scriptItem), summary: z.array(scriptItem) }).partial().strict().optional(),
  })
  .strict();

export type Script = z.output<typeof scriptSchema>;
export type ScriptInput = z.input<typeof scriptSchema>;
type ToolCallItem = Extract<Script['steps'][number][number], { toolCall: unknown }>['toolCall'];

/**
 * What the scripted provider says when no script is given: it lists the
 * workspace with the real `list` tool (a read), then says what that call
 * actually gave — the entries, or why it could not look — never a canned
 * listing.
 */
export function defaultScript(request: ProviderRequest): ScriptInput {
  const userText = lastUserText(request);
  const quoted = userText.length > 200 ? `${userText.slice(0, 200)}…` : userText;
  const listed = lastToolResult(request);
  const entries = listed && !listed.isError ? listed.output.split('\n').filter((line) => line.trim() !== '') : [];
  const found = !listed
    ? 'I did not get to look at the workspace.'
    : listed.isError
      ? `I could not list the workspace: ${firstLine(listed.output).replace(/\.+$/, '')}.`
      : entries.length === 0 || entries[0]!.startsWith('(')
        ? 'The workspace is empty.'
        : `The workspace's top level holds ${entries.length > 6 ? `${entries.slice(0, 6).join(', ')} and more` : entries.join(', ')}.`;
  return {
    delayMs: 15,
    steps: [
      [
        { reasoning: `The user wrote: "${quoted}". Look at the workspace before answering.` },
        { text: 'Let me look at the workspace first.' },
        { toolCall: { name: 'list', input: { path: '.' } } },
      ],
      [
        {
          text: `${found} You said: "${quoted}". This answer comes from turnloom’s scripted provider; set OPENAI_API_KEY or ANTHROPIC_API_KEY to talk to a real model.`,
        },
      ],
    ],
  };
}

const firstLine = (text: string) => (text.split('\n').find((line) => line.trim() !== '') ?? text).slice(0, 200);

const abortError = () => new DOMException('The scripted call was aborted', 'AbortError');

/** Index of this call within the current turn: assistant messages since the last user message. */
function stepIndexOf(request: ProviderRequest): number {
  let index = 0;
  for (let i = request.messages.length - 1; i >= 0 && request.messages[i]!.role !== 'user'; i--) {
    if (request.messages[i]!.role === 'assistant') index += 1;
  }
  return index;
}

/** The result of the turn's latest tool call, if the conversation has one since the user last spoke. */
function lastToolResult(request: ProviderRequest): { output: string; isError: boolean } | null {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    if (message.role === 'user') return null;
    if (message.role === 'tool') return message;
  }
  return null;
}

function lastUserText(request: ProviderRequest): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!;
    if (message.role === 'user') return message.text;
  }
  return '';
}

/**
 * A deterministic provider for demos and tests: it plays a script (inline, from
 * a file, or the default one built from the user's message) as canonical
 * events. Its tool calls run on the worker's workspace tools, like a real
 * model's, unless the script gives them a canned result.
 */
export class ScriptedProvider implements ProviderAdapter {
  readonly name = 'scripted';
  readonly tools: ToolExecutor;
  private readonly script: (request: ProviderRequest) => Script;
  /** Side calls play the given script's `sideWork` entry; a script made per request in code is asked for turns only. */
  private readonly sideScript: (request: ProviderRequest, kind: SideTaskKind) => Script;
  private readonly calls = new Map<string, ToolCallItem>();
  private readonly failures = new Map<string, number>();

  constructor(script?: ScriptInput | ((request: ProviderRequest) => ScriptInput)) {
    this.script = (request) => scriptSchema.parse(typeof script === 'function' ? script(request) : (script ?? defaultScript(request)));
    this.sideScript = (request, kind) => {
      const base = scriptSchema.parse(typeof script === 'object' ? script : { steps: [[]] });
      return { ...base, steps: [base.sideWork?.[kind] ?? [{ text: scriptedSideAnswer(kind, lastUserText(request)) }]] };
    };
    const calls = this.calls;
    const canned = (call: ToolCall) => {
      const item = calls.get(call.callId);
      return item && (item.result !== undefined || item.error !== undefined) ? item : undefined;
    };
    this.tools = {
      specs: () => [],
      handles: (call) => canned(call) !== undefined,
      classify: (call) => ({ kind: canned(call)?.approval ? 'command' : 'read', subject: call.name }),
      execute: async (call: ToolCall, signal: AbortSignal): Promise<ToolResult> => {
        const item = canned(call);
        if (!item) return { output: `no scripted tool call ${call.callId}`, isError: true };
        calls.delete(call.callId);
        if (item.durationMs > 0) await sleep(item.durationMs, undefined, { signal });
        return item.error !== undefined ? { output: item.error, isError: true } : { output: item.result ?? '', isError: false };
      },
    };
  }

  async startSession(): Promise<{ providerSessionId: string | null }> {
    return { providerSessionId: null };
  }

  async *stream(request: ProviderRequest, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    const script = request.sideWork ? this.sideScript(request, request.sideWork) : this.script(request);
    const index = stepIndexOf(request);
    const items = script.steps[Math.min(index, script.steps.length - 1)]!;
    const pause = async (ms: number) => {
      if (signal.aborted) throw abortError();
      if (ms > 0) await sleep(ms, undefined, { signal }).catch(() => Promise.reject(abortError()));
    };
    let output = 0;
    let calledTools = false;
    let usage: Script['steps'][number][number] | undefined;
    yield { type: 'turn.started', responseId: `scripted-${randomUUID()}`, model: script.model };
    for (const [position, item] of items.entries()) {
      if ('text' in item || 'reasoning' in item) {
        const text = 'text' in item ? item.text : item.reasoning;
        const segmentId = `s${position}`;
        yield { type: 'segment.started', segmentId, kind: 'text' in item ? 'text' : 'reasoning' };
        for (let at = 0; at < text.length; at += script.chunkSize) {
          await pause(at === 0 ? 0 : script.delayMs);
          yield { type: 'text.delta', segmentId, text: text.slice(at, at + script.chunkSize) };
        }
        output += text.length;
        yield { type: 'segment.completed', segmentId, signature: 'reasoning' in item ? (item.signature ?? null) : null };
      } else if ('toolCall' in item) {
        const callId = `call_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
        this.calls.set(callId, item.toolCall);
        const inputText = JSON.stringify(item.toolCall.input);
        yield { type: 'toolCall.started', callId, name: item.toolCall.name };
        yield { type: 'toolCall.inputDelta', callId, text: inputText };
        yield { type: 'toolCall.ready', callId, input: item.toolCall.input };
        output += inputText.length;
        calledTools = true;
      } else if ('wait' in item) {
        await pause(item.wait);
      } else if ('error' in item) {
        const key = `${request.sideWork ?? 'turn'}#${lastUserText(request)}#${index}#${position}`;
        const failed = this.failures.get(key) ?? 0;
        if (item.times === undefined || failed < item.times) {
          this.failures.set(key, failed + 1);
          throw new ProviderError(item.error);
        }
      } else {
        usage = item;
      }
    }
    const input = Math.ceil(JSON.stringify(request.messages).length / 4);
    yield {
      type: 'usage',
      usage: { input, output: Math.ceil(output / 4), reasoning: 0, cacheRead: 0, cacheWrite: 0, ...(usage && 'usage' in usage ? usage.usage : {}) },
    };
    yield { type: 'turn.completed', stopReason: calledTools ? 'toolCalls' : 'stop', rawReason: calledTools ? 'tool_calls' : 'stop' };
  }
}
