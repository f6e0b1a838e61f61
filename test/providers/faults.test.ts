import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../adapters/providers/anthropicProvider.ts';
import { OpenAiChatProvider } from '../../adapters/providers/openaiChatProvider.ts';
import { OpenAiResponsesProvider } from '../../adapters/providers/openaiResponsesProvider.ts';
import { type RecordedStreamServer, type ResponsePlan, type WireProtocol, parseChunks, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import type { ProviderAdapter } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { expectedFrom, fixturesDir } from '../support/fixtureOracle.ts';

const fixture = (path: string) => parseChunks(readFileSync(`${fixturesDir}${path}`, 'utf8'));
const anthropicText = fixture('anthropic/anthropic-text.chunks.txt');
const chatText = fixture('openai-chat/openai-text.chunks.txt');
const responsesText = fixture('openai-responses/lmstudio-basic.1.chunks.txt');

const adapters: Record<WireProtocol, (baseURL: string) => ProviderAdapter> = {
  anthropic: (baseURL) => new AnthropicProvider({ baseURL, defaultModel: 'claude-test' }),
  'openai-chat': (baseURL) => new OpenAiChatProvider({ baseURL, defaultModel: 'gpt-test' }),
  'openai-responses': (baseURL) => new OpenAiResponsesProvider({ baseURL, defaultModel: 'gpt-test' }),
};

// The adapters import their SDK when made, and a first call waits for it (a second or so under load): loaded
// here once, so the short idle timeout below counts only what the server streams.
beforeAll(async () => {
  await Promise.all([import('openai'), import('@anthropic-ai/sdk')]);
});

let http: RecordedStreamServer | undefined;
let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  await http?.close();
  fx = undefined;
  http = undefined;
});

/** One turn against a local server that answers with `plans`, in order, through the real SDK. */
async function runTurn(protocol: WireProtocol, plans: ResponsePlan[], maxAttempts = 4) {
  http = await serveRecordedStream(protocol, plans);
  fx = await openApiFixture({
    providers: { [protocol]: adapters[protocol](http.baseURL) },
    runner: { retry: { maxAttempts, baseDelayMs: 10, maxDelayMs: 40, jitter: 0 }, idleTimeoutMs: 300 },
    // The attempts counted are the turn's; a title asked after it would be one more request.
    localWorker: { sideWork: false },
  });
  const client = await fx.client();
  const { threadId } = await client.call('thread.create', {});
  const { turnId } = await client.call('turn.start', { threadId, input: { text: 'hello' }, provider: { name: protocol } });
  await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.openTurnId, { timeout: 20_000 }).toBeNull();
  const { thread } = await client.call('thread.get', { threadId });
  const turn = thread.turns[turnId]!;
  const text = turn.messages[1].parts.filter((part) => part.kind === 'text' && part.state === 'completed').map((part) => part.text).join('');
  return { turn, text, requests: http.requests.length, retries: turn.activities.filter((activity) => activity.kind === 'retry') };
}

describe('provider faults end in the right state after the right number of attempts', () => {
  it('429 with retry-after, then success: waits as told, 2 attempts, completed', async () => {
    const started = Date.now();
    const { turn, text, requests, retries } = await runTurn('anthropic', [
      { kind: 'status', status: 429, headers: { 'retry-after': '1' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } },
      { kind: 'stream', chunks: anthropicText },
    ]);
    expect(turn.state).toBe('completed');
    expect(requests).toBe(2);
    expect(retries).toEqual([expect.objectContaining({ data: expect.objectContaining({ delayMs: 1_000, error: expect.objectContaining({ kind: 'rateLimit', status: 429 }) }) })]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(text).toBe(expectedFrom('anthropic', `${fixturesDir}anthropic/anthropic-text.chunks.txt`).text);
  });

  it('529 overloaded twice, then success: backoff, 3 attempts, completed', async () => {
    const overloaded: ResponsePlan = { kind: 'status', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };
    const { turn, requests, retries } = await runTurn('anthropic', [overloaded, overloaded, { kind: 'stream', chunks: anthropicText }]);
    expect(turn.state).toBe('completed');
    expect(requests).toBe(3);
    expect(retries.map((retry) => (retry.data.error as { kind: string }).kind)).toEqual(['overloaded', 'overloaded']);
    expect(retries.map((retry) => retry.data.delayMs)).toEqual([10, 20]);
  });

  it('a connection reset mid-stream: the partial output is kept and marked, the retry completes', async () => {
    const { turn, text, requests } = await runTurn('openai-chat', [{ kind: 'stream', chunks: chatText, delayMs: 5, resetAfter: 6 }, { kind: 'stream', chunks: chatText }]);
    expect(turn.state).toBe('completed');
    expect(requests).toBe(2);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['error', 'stop']);
    const [partial, full] = turn.messages[1].parts;
    expect(partial).toMatchObject({ state: 'error', error: expect.stringContaining('attempt failed') });
    expect(partial!.text.length).toBeGreaterThan(0);
    expect(full!.step).toBe(2);
    expect(text).toBe(expectedFrom('openai-chat', `${fixturesDir}openai-chat/openai-text.chunks.txt`).text);
  });

  it('a malformed SSE line: retried, 2 attempts, completed', async () => {
    const { turn, requests, retries } = await runTurn('openai-responses', [{ kind: 'stream', chunks: responsesText, malformedAt: 4 }, { kind: 'stream', chunks: responsesText }]);
    expect(turn.state).toBe('completed');
    expect(requests).toBe(2);
    expect((retries[0]!.data.error as { kind: string }).kind).toBe('connection');
  });

  it('a stream that stalls: the idle timeout counts it as dropped, 2 attempts, completed', async () => {
    const { turn, requests, retries } = await runTurn('anthropic', [{ kind: 'stream', chunks: anthropicText, stallAfter: 4 }, { kind: 'stream', chunks: anthropicText }]);
    expect(turn.state).toBe('completed');
    expect(requests).toBe(2);
    expect(retries[0]!.message).toContain('no data for 300 ms');
  });

  it('authentication fails at once: 1 attempt, failed', async () => {
    const { turn, requests, retries } = await runTurn('openai-chat', [{ kind: 'status', status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } }]);
    expect(turn.state).toBe('failed');
    expect(requests).toBe(1);
    expect(retries).toEqual([]);
    expect(turn.error).toMatch(/^authentication:/);
  });

  it('a full context is not retried but handed on for compaction, which has nothing older than a first turn to summarise: 1 attempt, failed', async () => {
    const { turn, requests } = await runTurn('openai-chat', [
      { kind: 'status', status: 400, body: { error: { message: "This model's maximum context length is 128000 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } } },
    ]);
    expect(turn.state).toBe('failed');
    expect(requests).toBe(1);
    expect(turn.steps.map((step) => step.error)).toEqual([expect.stringMatching(/^contextOverflow: This model's maximum context length/)]);
    expect(turn.error).toBe('the context window overflowed, and there is nothing older than this turn to compact');
  });

  it('caps the attempts: a provider that is always rate limited fails after the last one', async () => {
    const { turn, requests, retries } = await runTurn('anthropic', [{ kind: 'status', status: 429, body: { type: 'error', error: { type: 'rate_limit_error', message: 'no' } } }], 3);
    expect(turn.state).toBe('failed');
    expect(requests).toBe(3);
    expect(retries).toHaveLength(2);
    expect(turn.steps.every((step) => step.outcome === 'error')).toBe(true);
  });
});
