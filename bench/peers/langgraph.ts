import { randomUUID } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { importPeer } from './peerModules.ts';
import { type Contender, FIRST_TEXT, type Recovery, SECOND_TEXT, type Session, TOOL_INPUT, TOOL_NAME, USER_TEXT, type WorkloadOptions, checkAnswer, chunksOf } from './workload.ts';

// The little of @langchain/core, @langchain/langgraph and its SQLite checkpointer used here.
interface Message {
  readonly type: string;
  readonly text: string;
}
type Constructor<T> = new (fields: Record<string, unknown>) => T;
interface CallbackManager {
  handleLLMNewToken(token: string, idx?: unknown, runId?: string, parentRunId?: string, tags?: string[], fields?: { chunk: unknown }): Promise<void>;
}
interface ChatGenerationChunk {
  text: string;
  message: Message & { concat(other: unknown): Message };
}
interface Graph {
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<[Message, unknown]>>;
  getState(config: Record<string, unknown>): Promise<{ values: { messages: Message[] } }>;
}
interface GraphBuilder {
  addNode(name: string, node: unknown): GraphBuilder;
  addEdge(from: string, to: string): GraphBuilder;
  addConditionalEdges(from: string, route: unknown, targets: string[]): GraphBuilder;
  compile(options: { checkpointer: unknown }): Graph;
}
interface SqliteDatabase {
  pragma(source: string, options?: { simple: boolean }): unknown;
  close(): void;
}
interface SqliteSaver {
  db: SqliteDatabase;
}

export const DB_FILE = 'checkpoints.sqlite';

/** The workload's text since the user last spoke: what the turn has answered so far. */
function turnSoFar(messages: readonly Message[]): Message[] {
  const lastHuman = messages.findLastIndex((message) => message.type === 'human');
  return messages.slice(lastHuman + 1);
}

async function buildGraph(workload: WorkloadOptions, checkpointer: unknown): Promise<Graph> {
  const [chatModels, messages, outputs, tools, zod, langgraph, prebuilt] = await Promise.all([
    importPeer<{ BaseChatModel: Constructor<object> }>('@langchain/core/language_models/chat_models'),
    importPeer<{ AIMessageChunk: Constructor<Message> }>('@langchain/core/messages'),
    importPeer<{ ChatGenerationChunk: Constructor<ChatGenerationChunk> }>('@langchain/core/outputs'),
    importPeer<{ tool: (run: () => Promise<string>, fields: Record<string, unknown>) => unknown }>('@langchain/core/tools'),
    importPeer<{ z: { object(shape: Record<string, unknown>): unknown; string(): unknown } }>('zod'),
    importPeer<{ StateGraph: new (state: unknown) => GraphBuilder; MessagesAnnotation: unknown; START: string; END: string }>('@langchain/langgraph'),
    importPeer<{ ToolNode: new (tools: unknown[]) => unknown; toolsCondition: unknown }>('@langchain/langgraph/prebuilt'),
  ]);
  const { AIMessageChunk } = messages;
  const { ChatGenerationChunk } = outputs;

  /** A chat model answering at once: the first step's text and a call of the tool, then (once the tool answered) the second step's text. */
  class WorkloadChatModel extends chatModels.BaseChatModel {
    _llmType(): string {
      return 'workload';
    }

    bindTools(): this {
      return this;
    }

    async *_streamResponseChunks(history: Message[], _options: unknown, runManager?: CallbackManager): AsyncGenerator<ChatGenerationChunk> {
      const toolAnswered = turnSoFar(history).some((message) => message.type === 'tool');
      let streamed = 0;
      for (const [n, piece] of chunksOf(toolAnswered ? SECOND_TEXT : FIRST_TEXT).entries()) {
        if (n > 0 && workload.chunkDelayMs > 0) await sleep(workload.chunkDelayMs);
        const chunk = new ChatGenerationChunk({ text: piece, message: new AIMessageChunk({ content: piece }) });
        yield chunk;
        await runManager?.handleLLMNewToken(piece, undefined, undefined, undefined, undefined, { chunk });
        workload.onStreamed?.((streamed += piece.length));
      }
      if (!toolAnswered) {
        const call = { name: TOOL_NAME, args: JSON.stringify(TOOL_INPUT), id: `call_${randomUUID()}`, index: 0, type: 'tool_call_chunk' };
        yield new ChatGenerationChunk({ text: '', message: new AIMessageChunk({ content: '', tool_call_chunks: [call] }) });
      }
    }

    async _generate(history: Message[], options: unknown, runManager?: CallbackManager): Promise<{ generations: ChatGenerationChunk[] }> {
      let whole: ChatGenerationChunk | undefined;
      for await (const chunk of this._streamResponseChunks(history, options, runManager)) whole = whole ? { text: whole.text + chunk.text, message: whole.message.concat(chunk.message) as ChatGenerationChunk['message'] } : chunk;
      return { generations: [whole!] };
    }
  }

  const model = new WorkloadChatModel({}) as unknown as { invoke(messages: Message[], config: unknown): Promise<Message> };
  const lookup = tools.tool(() => workload.tool(), { name: TOOL_NAME, description: 'Looks a word up.', schema: zod.z.object({ q: zod.z.string() }) });
  const { StateGraph, MessagesAnnotation, START, END } = langgraph;
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state: { messages: Message[] }, config: unknown) => ({ messages: [await model.invoke(state.messages, config)] }))
    .addNode('tools', new prebuilt.ToolNode([lookup]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', prebuilt.toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

const answerChars = (messages: readonly Message[]) => turnSoFar(messages).reduce((sum, message) => sum + (message.type === 'ai' ? message.text.length : 0), 0);

/** Runs the graph on `threadId` (from `input`, or from its last checkpoint when `null`), counting the AI text it streams. */
async function streamTurn(graph: Graph, threadId: string, input: unknown): Promise<number> {
  let streamed = 0;
  for await (const [message] of await graph.stream(input, { configurable: { thread_id: threadId }, streamMode: 'messages' })) {
    if (message.type === 'ai' || message.type === 'AIMessageChunk') streamed += message.text.length;
  }
  return streamed;
}

/** LangGraph.js: a small agent graph (model node, prebuilt ToolNode) checkpointed by SqliteSaver on a file; `synchronous=FULL` or SQLite's default for WAL as better-sqlite3 builds it. */
function langgraphContender(fullSync: boolean): Contender {
  const label = fullSync ? 'LangGraph, SQLite sync FULL' : 'LangGraph, SQLite default';
  return {
    key: fullSync ? 'langgraphFull' : 'langgraph',
    label,
    async open(dir, workload) {
      // LangChain runs callbacks in the background by default: with a few turns in flight, a run's `messages` stream then
      // ended before most of its queued tokens reached it (answers of 400 characters out of 2,500 here). Awaited, none is lost.
      process.env.LANGCHAIN_CALLBACKS_BACKGROUND = 'false';
      const { SqliteSaver } = await importPeer<{ SqliteSaver: { fromConnString(path: string): SqliteSaver } }>('@langchain/langgraph-checkpoint-sqlite');
      const saver = SqliteSaver.fromConnString(join(dir, DB_FILE));
      // The saver turns WAL on when first used; a connection's synchronous setting stays whatever the journal mode.
      saver.db.pragma('journal_mode = WAL');
      if (fullSync) saver.db.pragma('synchronous = FULL');
      const graph = await buildGraph(workload, saver);
      const session: Session = {
        newThread: async () => randomUUID(),
        async turn(thread) {
          checkAnswer(label, await streamTurn(graph, thread, { messages: [{ role: 'user', content: USER_TEXT }] }));
        },
        async recover(thread): Promise<Recovery> {
          const kept = answerChars((await graph.getState({ configurable: { thread_id: thread } })).values.messages ?? []);
          // Carrying on after a crash: the same thread with no new input runs from its last checkpoint.
          await streamTurn(graph, thread, null);
          const after = (await graph.getState({ configurable: { thread_id: thread } })).values.messages;
          const last = after.at(-1);
          return { keptChars: kept, outcome: last?.type === 'ai' && last.text === SECOND_TEXT ? 'completed, run again from its last checkpoint' : `ended on a ${last?.type} message` };
        },
        async close() {
          saver.db.close();
        },
      };
      return session;
    },
    // The database file once closed (closing checkpoints the WAL into it and removes it).
    dataBytes: (dir) => readdirSync(dir).reduce((sum, name) => sum + (name.startsWith(DB_FILE) ? statSync(join(dir, name)).size : 0), 0),
  };
}

export const langgraphDefault = langgraphContender(false);
export const langgraphFull = langgraphContender(true);
