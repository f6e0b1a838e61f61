import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, type ScriptInput } from '../../adapters/providers/scriptedProvider.ts';
import type { TurnloomClient } from '../../client/index.ts';
import type { ProviderRequest } from '../../domain/index.ts';
import type { TurnHooks } from '../../services/worker/turnHooks.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

/** A scripted model that notes every request it is sent. */
function recordingModel(script: (request: ProviderRequest) => ScriptInput = () => ({ steps: [[{ text: 'done' }]] })) {
  const requests: ProviderRequest[] = [];
  return { requests, provider: new ScriptedProvider((request) => (requests.push(request), script(request))) };
}

async function run(hooks: TurnHooks, model = recordingModel(), text = 'do the thing', runner = {}) {
  fx = await openApiFixture({ providers: { scripted: model.provider }, localWorker: { hooks }, runner });
  const client = await fx.client();
  const { threadId } = await client.call('thread.create', {});
  const turn = await settle(client, threadId, text);
  return { client, threadId, turn, model };
}

async function settle(client: TurnloomClient, threadId: string, text: string) {
  const { turnId } = await client.call('turn.start', { threadId, input: { text } });
  await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]?.state, { timeout: 20_000 }).toMatch(/^(completed|failed|interrupted)$/);
  return (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
}

describe('extension hooks', () => {
  it('preStep may reject the turn: it fails with the hook’s reason, and the model is never called', async () => {
    const { turn, model } = await run({ preStep: [{ name: 'policy', run: () => ({ reject: 'no deploys on Fridays' }) }] });
    expect([turn.state, turn.error]).toEqual(['failed', 'the preStep hook "policy" rejected the turn: no deploys on Fridays']);
    expect(turn.activities.find((activity) => activity.kind === 'hook')).toMatchObject({ message: 'hook policy rejected the turn: no deploys on Fridays', data: { hook: 'policy', decision: 'reject' } });
    expect(model.requests).toHaveLength(0);
  });

  it('preStep may replace what the model reads: recorded, so the engine derives the same request and the turn completes', async () => {
    const redact = { name: 'redact', run: (_context: unknown, messages: readonly { role: string }[]) => (messages.length === 1 ? { replace: [{ role: 'user' as const, text: 'do the [redacted] thing' }], reason: 'secrets' } : undefined) };
    const { client, threadId, turn, model } = await run({ preStep: [redact] }, recordingModel(), 'do the hunter2 thing');
    expect(turn.state).toBe('completed');
    expect(model.requests[0]!.messages).toEqual([{ role: 'user', text: 'do the [redacted] thing' }]);
    expect((await client.call('thread.get', { threadId })).thread.context).toMatchObject({ by: 'redact', base: [{ role: 'user', text: 'do the [redacted] thing' }] });
    // The next turn reads the replaced history too, not the original.
    await settle(client, threadId, 'and again');
    expect(model.requests[1]!.messages.map((message) => (message.role === 'user' ? message.text : message.role))).toEqual(['do the [redacted] thing', 'assistant', 'and again']);
  });

  it('request may change the model call, and the change is noted in the log', async () => {
    const bigger = { name: 'bigger-model', run: (_context: unknown, request: ProviderRequest) => ({ ...request, model: 'scripted-large' }) };
    const { turn, model } = await run({ request: [bigger] });
    expect(turn.state).toBe('completed');
    expect(model.requests.map((request) => request.model)).toEqual(['scripted-large']);
    expect(turn.activities.find((activity) => activity.kind === 'hook')).toMatchObject({ message: 'hook bigger-model changed the request', data: { model: 'scripted-large' } });
  });

  it('requestError may answer retry after doing something about the error', async () => {
    const seen: string[] = [];
    const failingOnce = recordingModel(() => ({ steps: [[{ error: { kind: 'invalidRequest', message: 'unknown parameter' }, times: 1 }, { text: 'done' }]] }));
    const fix = { name: 'fix-params', run: (_context: unknown, error: { kind: string }) => (seen.push(error.kind), 'retry' as const) };
    const { turn } = await run({ requestError: [fix] }, failingOnce, 'do the thing', { retry: { maxAttempts: 1 } });
    expect(turn.state).toBe('completed');
    expect(seen).toEqual(['invalidRequest']);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['error', 'stop']);
    expect(turn.activities.find((activity) => activity.kind === 'hook')).toMatchObject({ data: { hook: 'fix-params', decision: 'retry', error: 'invalidRequest' } });
  });

  it('turnStopping may steer input in, and the turn runs one more step that reads it', async () => {
    let steered = false;
    const lint = {
      name: 'lint-reminder',
      run: async (context: { steer(text: string): Promise<void> }) => {
        if (steered) return;
        steered = true;
        await context.steer('Also run the linter.');
      },
    };
    const { turn, model } = await run({ turnStopping: [lint] });
    expect(turn.state).toBe('completed');
    expect(turn.steps.map((step) => step.outcome)).toEqual(['stop', 'stop']);
    expect(model.requests.at(-1)!.messages.at(-1)).toEqual({ role: 'user', text: 'Also run the linter.' });
  });

  it('a hook that throws fails only its turn, with a clear error; the worker runs the next turn', async () => {
    const fragile = { name: 'fragile', run: (context: { view: { turns: Record<string, { messages: [{ parts: Array<{ text: string }> }, unknown] }> }; turnId: string }) => {
      if (context.view.turns[context.turnId]!.messages[0].parts[0]!.text === 'boom') throw new Error('kaboom');
    } };
    const { client, turn } = await run({ preStep: [fragile as never] }, recordingModel(), 'boom');
    expect([turn.state, turn.error]).toEqual(['failed', 'the preStep hook "fragile" failed: kaboom']);
    const { threadId } = await client.call('thread.create', {});
    expect((await settle(client, threadId, 'fine')).state).toBe('completed');
  });
});
