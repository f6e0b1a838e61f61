import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { importPeer } from './peerModules.ts';
import { type Contender, FIRST_TEXT, type Recovery, SECOND_TEXT, type Session, TOOL_INPUT, TOOL_NAME, USER_TEXT, type WorkloadOptions, checkAnswer, chunksOf } from './workload.ts';

// The little of @openai/agents used here.
type InputItem = { type?: string; role?: string } & Record<string, unknown>;
interface ModelRequest {
  input: string | InputItem[];
}
type StreamEvent = Record<string, unknown> & { type: string };
interface StreamedRun extends AsyncIterable<{ type: string; data?: { type: string; delta?: string } }> {
  completed: Promise<void>;
  history: InputItem[];
  finalOutput: unknown;
}
interface AgentsModule {
  Agent: new (options: Record<string, unknown>) => unknown;
  Runner: new (config: Record<string, unknown>) => { run(agent: unknown, input: InputItem[], options: { stream: true }): Promise<StreamedRun> };
  tool(options: Record<string, unknown>): unknown;
}

/** Whether the tool has answered since the user last spoke: the turn is at its second step. */
function toolAnswered(input: ModelRequest['input']): boolean {
  if (typeof input === 'string') return false;
  const lastUser = input.findLastIndex((item) => item.role === 'user');
  return input.slice(lastUser + 1).some((item) => item.type === 'function_call_result');
}

/** A Model answering at once, as the SDK's streamed protocol has it: text deltas, then the whole response (with the tool call on the first step). */
function workloadModel(workload: WorkloadOptions) {
  async function* stream(request: ModelRequest): AsyncIterable<StreamEvent> {
    const second = toolAnswered(request.input);
    const text = second ? SECOND_TEXT : FIRST_TEXT;
    const messageId = `msg_${randomUUID()}`;
    yield { type: 'response_started' };
    let streamed = 0;
    for (const [n, piece] of chunksOf(text).entries()) {
      if (n > 0 && workload.chunkDelayMs > 0) await sleep(workload.chunkDelayMs);
      yield { type: 'output_text_delta', delta: piece };
      workload.onStreamed?.((streamed += piece.length));
    }
    const output: InputItem[] = [{ type: 'message', id: messageId, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }];
    if (!second) {
      const callId = `call_${randomUUID()}`;
      output.push({ type: 'function_call', id: callId, callId, name: TOOL_NAME, status: 'completed', arguments: JSON.stringify(TOOL_INPUT) });
    }
    yield { type: 'response_done', response: { id: `resp_${randomUUID()}`, usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }, output } };
  }
  return {
    getStreamedResponse: stream,
    async getResponse(request: ModelRequest) {
      let done: StreamEvent | undefined;
      for await (const event of stream(request)) if (event.type === 'response_done') done = event;
      const response = done!.response as { usage: unknown; output: unknown };
      return { usage: response.usage, output: response.output };
    },
  };
}

/** The OpenAI Agents SDK: one agent with one function tool, run streamed; it keeps the conversation in memory (its users pass the history back in). */
export const agentsSdk: Contender = {
  key: 'agents',
  label: 'OpenAI Agents SDK',
  async open(_dir, workload) {
    const [{ Agent, Runner, tool }, { z }] = await Promise.all([importPeer<AgentsModule>('@openai/agents'), importPeer<{ z: { object(shape: Record<string, unknown>): unknown; string(): unknown } }>('zod')]);
    const model = workloadModel(workload);
    const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
    const lookup = tool({ name: TOOL_NAME, description: 'Looks a word up.', parameters: z.object({ q: z.string() }), execute: () => workload.tool() });
    const agent = new Agent({ name: 'bench', instructions: 'Look things up.', model: 'workload', tools: [lookup] });
    const threads = new Map<string, InputItem[]>();
    const session: Session = {
      async newThread() {
        const id = randomUUID();
        threads.set(id, []);
        return id;
      },
      async turn(thread) {
        const result = await runner.run(agent, [...(threads.get(thread) ?? []), { role: 'user', content: USER_TEXT }], { stream: true });
        let streamed = 0;
        for await (const event of result) if (event.type === 'raw_model_stream_event' && event.data?.type === 'output_text_delta') streamed += event.data.delta!.length;
        await result.completed;
        checkAnswer('OpenAI Agents SDK', streamed, result.finalOutput === SECOND_TEXT ? 'completed' : `with final output ${String(result.finalOutput).slice(0, 40)}`);
        threads.set(thread, result.history);
      },
      async recover(thread): Promise<Recovery> {
        // Nothing outlived the process: its users run the turn again from the start.
        await session.turn(thread);
        return { keptChars: 0, outcome: 'completed, run again from the start (nothing was kept)' };
      },
      async close() {
        threads.clear();
      },
    };
    return session;
  },
  dataBytes: () => 0,
};
