import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, scriptSchema } from '../../adapters/providers/scriptedProvider.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

/** The example script in docs/providers.md, so the documented format cannot drift from the code. */
function documentedScript(): unknown {
  const doc = readFileSync(new URL('../../docs/providers.md', import.meta.url), 'utf8');
  const block = /## The scripted provider[\s\S]*?```json\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('docs/providers.md has no scripted example');
  return JSON.parse(block[1]!);
}

let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

describe('the scripted provider', () => {
  it('runs the documented example script: approval, tool result, a scripted rate limit retried once, usage', async () => {
    const script = scriptSchema.parse(documentedScript());
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider(script) }, runner: { retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20, jitter: 0 } } });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'run the tests' } });
    await expect.poll(async () => (await client.call('approval.list', { threadId })).approvals.length, { timeout: 10_000 }).toBe(1);
    const [approval] = (await client.call('approval.list', { threadId })).approvals;
    expect(approval).toMatchObject({ toolName: 'bash', input: { cmd: 'npm test' } });
    await client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');

    const turn = (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
    expect(turn.messages[1].parts.find((part) => part.tool)?.tool?.output).toBe('12 passed');
    expect(turn.activities.filter((activity) => activity.kind === 'retry').map((activity) => activity.data.delayMs)).toEqual([50]);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['toolCalls', 'error', 'stop']);
    expect(turn.steps[2]!.usage).toMatchObject({ input: 120, output: 8 });
    expect(turn.messages[1].parts.at(-1)!.text).toBe('All tests pass.');
  });

  it('refuses a malformed script with a clear error', () => {
    expect(() => scriptSchema.parse({ steps: [[{ text: 1 }]] })).toThrow();
    expect(() => scriptSchema.parse({ steps: [] })).toThrow();
    expect(() => scriptSchema.parse({ steps: [[{ toolCall: { name: 'x', unknown: true } }]] })).toThrow();
  });
});
