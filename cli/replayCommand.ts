import { terminalJson } from './terminalText.ts';
import { AnthropicProvider } from '../adapters/providers/anthropicProvider.ts';
import { OpenAiChatProvider } from '../adapters/providers/openaiChatProvider.ts';
import { OpenAiResponsesProvider } from '../adapters/providers/openaiResponsesProvider.ts';
import { type WireProtocol, parseChunks, serveRecordedStream, splitResponses } from '../adapters/providers/recordedStreamServer.ts';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { InProcessHub } from '../bus/index.ts';
import type { ProviderAdapter, ThreadView, ToolExecutor } from '../domain/index.ts';
import { startTurnloomServer } from '../services/turnloomServer.ts';
import { UsageError, parseOptions, readUserFile } from './cliErrors.ts';
import { tempFolder } from './tempFolder.ts';
import { replayUsage } from './commandUsage.ts';


/** Tools are not run in a replay: the recording already holds what the model said next. */
const replayTools: ToolExecutor = {
  specs: () => [],
  classify: (call) => ({ kind: 'read', subject: call.name }),
  execute: async () => ({ output: 'not run: this turn replays a recorded stream', isError: false }),
};

const adapters: Record<WireProtocol, (baseURL: string) => ProviderAdapter> = {
  anthropic: (baseURL) => new AnthropicProvider({ baseURL, defaultModel: 'recorded', tools: replayTools }),
  'openai-chat': (baseURL) => new OpenAiChatProvider({ baseURL, defaultModel: 'recorded', tools: replayTools }),
  'openai-responses': (baseURL) => new OpenAiResponsesProvider({ baseURL, defaultModel: 'recorded', tools: replayTools }),
};

export interface ReplayResult {
  status: string;
  text: string;
  reasoning: string;
  toolCalls: Array<{ id: string; name: string; input: unknown }>;
  stopReason: string | null;
  rawStopReason: string | null;
  usage: ThreadView['usage'];
  error: { kind: string; message: string; status: number | null } | null;
  diagnostics: Array<{ message: string; machine?: unknown; state?: unknown; event?: unknown }>;
  attempts: number;
  events: number;
}

const isWireProtocol = (name: string | undefined): name is WireProtocol => name !== undefined && Object.hasOwn(adapters, name);

/** What every chunk of a recording looks like, per wire protocol. */
const chunkShape: Record<WireProtocol, { test: (chunk: Record<string, unknown>) => boolean; expected: string }> = {
  anthropic: { test: (chunk) => typeof chunk.type === 'string', expected: 'an object with a "type" (Anthropic stream events)' },
  'openai-responses': { test: (chunk) => typeof chunk.type === 'string', expected: 'an object with a "type" (Responses API stream events)' },
  'openai-chat': { test: (chunk) => Array.isArray(chunk.choices), expected: 'an object with "choices" (chat.completion.chunk)' },
};

/**
 * The chunks of a recording, or one `UsageError` line saying why the file is
 * not a recording for this protocol: one JSON chunk per line, each shaped like
 * that protocol's stream events.
 */
export function readRecording(file: string, protocol: WireProtocol): string[] {
  const text = readUserFile('replay', file);
  const notRecording = (why: string) =>
    new UsageError(`replay ${file}: not a recorded ${protocol} stream: ${why} (a recording is one JSON chunk per line; see docs/providers.md)`);
  let chunks: string[];
  try {
    chunks = parseChunks(text);
  } catch (error) {
    throw notRecording((error as Error).message);
  }
  if (chunks.length === 0) throw notRecording('the file is empty');
  const shape = chunkShape[protocol];
  for (const [index, chunk] of chunks.entries()) {
    const value = JSON.parse(chunk) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !shape.test(value as Record<string, unknown>)) {
      throw notRecording(`chunk ${index + 1} is not ${shape.expected}`);
    }
  }
  return chunks;
}

/** Replays one recorded stream and reads the resulting turn back from the engine. */
export async function replayRecording(file: string, protocol: WireProtocol): Promise<ReplayResult> {
  const responses = splitResponses(protocol, readRecording(file, protocol));
  const http = await serveRecordedStream(
    protocol,
    responses.map((chunks) => ({ kind: 'stream', chunks })),
  );
  const folder = tempFolder('turnloom-replay-');
  let server: Awaited<ReturnType<typeof startTurnloomServer>>;
  try {
    server = await startTurnloomServer({
      bus: new InProcessHub().connect(),
      store: LmdbStore.open(folder.path),
      providers: { [protocol]: adapters[protocol](http.baseURL) },
      // A recording is what it is: each response played once, and the turn ends with the last one; no side work asks for more.
      runner: { runTools: (step) => step < responses.length, retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0, jitter: 0 }, idleTimeoutMs: 10_000 },
      localWorker: { sideWork: false },
    });
  } catch (error) {
    // The recorded-stream server would keep the process alive.
    await http.close();
    folder.remove();
    throw error;
  }
  try {
    const { engine } = server;
    await engine.submit({ type: 'thread.create', commandId: 'replay-thread', threadId: 'replay', title: file, workspace: null, owner: null });
    await engine.submit({ type: 'turn.start', commandId: 'replay-turn', threadId: 'replay', turnId: 'replay', input: { text: 'replay' }, provider: { name: protocol, model: null } });
    let view = await engine.getThread('replay');
    for (const deadline = Date.now() + 30_000; view.openTurnId && Date.now() < deadline; view = await engine.getThread('replay')) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const turn = view.turns.replay!;
    const parts = turn.messages[1].parts;
    const failure = turn.activities.filter((activity) => activity.kind === 'error').at(-1)?.data.error as ReplayResult['error'] | undefined;
    const lastStep = turn.steps.at(-1);
    return {
      status: turn.state,
      text: parts.filter((part) => part.kind === 'text').map((part) => part.text).join(''),
      reasoning: parts.filter((part) => part.kind === 'reasoning').map((part) => part.text).join(''),
      toolCalls: parts.flatMap((part) => (part.tool ? [{ id: part.tool.callId, name: part.tool.name, input: part.tool.input }] : [])),
      stopReason: lastStep?.stopReason ?? null,
      rawStopReason: lastStep?.finishReason ?? null,
      usage: turn.usage,
      error: failure ? { kind: failure.kind, message: failure.message, status: failure.status } : null,
      diagnostics: [...view.activities, ...turn.activities]
        .filter((activity) => activity.kind === 'diagnostic')
        .map((activity) => ({ message: activity.message, machine: activity.data.machine, state: activity.data.state, event: activity.data.event })),
      attempts: http.requests.length,
      events: view.seq,
    };
  } finally {
    await server.stop();
    await http.close();
    folder.remove();
  }
}

export async function replayCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions('replay', {
    args,
    allowPositionals: true,
    options: { help: { type: 'boolean', short: 'h', default: false }, provider: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  if (values.help) {
    console.log(replayUsage);
    return 0;
  }
  const protocols = Object.keys(adapters).join('|');
  const [file, ...extra] = positionals;
  if (!file) throw new UsageError(`replay: which recording? turnloom replay FILE --provider ${protocols}`);
  if (extra.length > 0) throw new UsageError(`replay: one recording at a time, not ${positionals.length}; see turnloom replay --help`);
  const protocol = values.provider;
  if (protocol === undefined) throw new UsageError(`replay: --provider ${protocols} is required`);
  if (!isWireProtocol(protocol)) throw new UsageError(`replay: unknown provider "${protocol}"; use --provider ${protocols}`);
  const result = await replayRecording(file, protocol);
  if (values.json) {
    console.log(terminalJson(result, 2));
  } else {
    console.log(`turn ${result.status}; stop reason ${result.stopReason ?? '—'} (${result.rawStopReason ?? '—'}); ${result.events} events; ${result.attempts} request(s)`);
    if (result.reasoning) console.log(`\n[reasoning]\n${result.reasoning}`);
    if (result.text) console.log(`\n[text]\n${result.text}`);
    for (const call of result.toolCalls) console.log(`\n[tool call] ${call.name} ${JSON.stringify(call.input)} (${call.id})`);
    console.log(`\nusage ${JSON.stringify(result.usage)}`);
    if (result.error) console.log(`error: ${result.error.kind}: ${result.error.message}`);
    for (const diagnostic of result.diagnostics) console.log(`diagnostic: ${diagnostic.message}`);
  }
  return result.status === 'completed' ? 0 : 1;
}
