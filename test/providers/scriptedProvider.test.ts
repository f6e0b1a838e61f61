import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider, scriptSchema } from '../../adapters/providers/scriptedProvider.ts';
import type { ProviderRequest, SideTaskKind } from '../../domain/index.ts';
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
    expect(approval).toMatchObject({ toolName: 'bash', input: { command: 'npm test' } });
    await client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');

    const turn = (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
    expect(turn.messages[1].parts.find((part) => part.tool)?.tool?.output).toBe('12 passed');
    expect(turn.activities.filter((activity) => activity.kind === 'retry').map((activity) => activity.data.delayMs)).toEqual([50]);
    expect(turn.steps.map((step) => step.outcome)).toEqual(['toolCalls', 'error', 'stop']);
    expect(turn.steps[2]!.usage).toMatchObject({ input: 120, output: 8 });
    expect(turn.messages[1].parts.at(-1)!.text).toBe('All tests pass.');
  });

  it('answers side calls from their input, or with its script’s sideWork entry; a script made in code is asked for turns only', async () => {
    const side = (sideWork: SideTaskKind, text: string): ProviderRequest => ({ model: null, system: 'one line', messages: [{ role: 'user', text }], tools: [], sideWork });
    const textOf = async (provider: ScriptedProvider, request: ProviderRequest) => {
      let text = '';
      for await (const event of provider.stream(request, new AbortController().signal)) if (event.type === 'text.delta') text += event.text;
      return text;
    };
    const patch = 'diff --git a/src/a.js b/src/a.js\n--- a/src/a.js\n+++ b/src/a.js\n@@ -1 +1,2 @@\n-old\n+new\n+more\n';
    expect(await textOf(new ScriptedProvider(), side('title', 'fix the login race and run the tests, then push it.'))).toBe('Fix the login race and run the tests');
    expect(await textOf(new ScriptedProvider(), side('summary', `Files changed:\nM src/a.js +2 -1\n\n${patch}`))).toBe('Changed src/a.js (+2 −1)');
    expect(await textOf(new ScriptedProvider(), side('summary', 'nothing like a diff'))).toBe('Changed the work tree');
    const asked: ProviderRequest[] = [];
    const inCode = new ScriptedProvider((request) => {
      asked.push(request);
      return { steps: [[{ text: 'a turn' }]] };
    });
    expect(await textOf(inCode, side('title', 'add a cache'))).toBe('Add a cache');
    expect(asked).toEqual([]);
    expect(await textOf(new ScriptedProvider({ steps: [[{ text: 'a turn' }]], sideWork: { title: [{ text: 'Given by the script' }] } }), side('title', 'add a cache'))).toBe('Given by the script');
  });

  it('refuses a malformed script with a clear error', () => {
    expect(() => scriptSchema.parse({ steps: [[{ text: 1 }]] })).toThrow();
    expect(() => scriptSchema.parse({ steps: [] })).toThrow();
    expect(() => scriptSchema.parse({ steps: [[{ toolCall: { name: 'x', unknown: true } }]] })).toThrow();
  });
});
