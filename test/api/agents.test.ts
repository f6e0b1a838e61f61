import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import type { TurnloomClient } from '../../client/index.ts';
import type { ProviderRequest } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';

let fx: ApiFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

const settled = (client: TurnloomClient, threadId: string, turnId: string) =>
  expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 20_000 }).toMatch(/^(completed|failed)$/);

describe('agents over the API', () => {
  it('runs a turn as the agent it names, or its thread’s: its instructions, tools and model; an agent no worker knows fails the turn saying which there are', async () => {
    const requests: ProviderRequest[] = [];
    const scripted = new ScriptedProvider((request) => {
      requests.push(request);
      return { steps: [[{ text: 'ok' }]] };
    });
    fx = await openApiFixture({
      providers: { scripted },
      localWorker: { sideWork: false, agents: { terse: { description: 'Short answers', instructions: 'Answer in five words.', model: 'small-model', tools: ['read'] } } },
    });
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});

    const terse = await client.call('turn.start', { threadId, input: { text: 'hi' }, agent: 'terse' });
    await settled(client, threadId, terse.turnId);
    let view = (await client.call('thread.get', { threadId })).thread;
    expect(view.turns[terse.turnId]).toMatchObject({ state: 'completed', agent: 'terse', provider: { name: 'scripted', model: 'small-model' } });
    expect(view.turnContext).toMatchObject({ turnId: terse.turnId, context: { agent: 'terse', model: 'small-model' } });
    expect(requests.at(-1)!.system).toContain('Answer in five words.');
    expect(requests.at(-1)!.model).toBe('small-model');

    await client.call('thread.configure', { threadId, agent: 'plan' });
    const planned = await client.call('turn.start', { threadId, input: { text: 'and now?' } });
    await settled(client, threadId, planned.turnId);
    view = (await client.call('thread.get', { threadId })).thread;
    expect(view.agent).toBe('plan');
    expect(view.turnContext?.context.agent).toBe('plan');
    expect(requests.at(-1)!.tools.map((tool) => tool.name)).toEqual([]);
    expect(requests.at(-1)!.system).toContain('You are in plan mode');

    const nobody = await client.call('turn.start', { threadId, input: { text: 'hello?' }, agent: 'nobody' });
    await settled(client, threadId, nobody.turnId);
    expect((await client.call('thread.get', { threadId })).thread.turns[nobody.turnId]).toMatchObject({
      state: 'failed',
      error: expect.stringContaining('no agent "nobody" on this worker; it knows build, plan, explore, general, terse'),
    });
    await expect(client.call('turn.start', { threadId, input: { text: 'x' }, agent: '../etc' })).rejects.toMatchObject({ code: 'invalid_payload' });
  }, 60_000);
});
