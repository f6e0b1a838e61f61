import { afterEach, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../adapters/providers/scriptedProvider.ts';
import { idPattern } from '../../bus/index.ts';
import { childId } from '../../domain/index.ts';
import { type ApiFixture, openApiFixture } from '../support/apiFixture.ts';
import { turnEvents } from '../support/engineFixture.ts';

const longest = (prefix: string) => `${prefix}${'x'.repeat(128 - prefix.length)}`;

describe('derived ids', () => {
  let fx: ApiFixture | undefined;
  afterEach(async () => {
    await fx?.dispose();
    fx = undefined;
  });

  it('stay valid ids, and distinct, however long the parent', () => {
    const a = childId(longest('a'), 's1-1');
    const b = childId(`${longest('a').slice(0, 127)}b`, 's1-1');
    for (const id of [a, b, childId(a, 'approval'), childId('t1', 'user')]) {
      expect(id).toMatch(idPattern);
    }
    expect(a).not.toBe(b);
    expect(childId('t1', 's1-1')).toBe('t1-s1-1');
  });

  it('lets a turn with 128-character thread and turn ids ask for approval, be answered and complete', async () => {
    fx = await openApiFixture({ providers: { scripted: new ScriptedProvider({ steps: [[{ toolCall: { name: 'deploy', approval: true, result: 'deployed' } }], [{ text: 'Done.' }]] }) } });
    const client = await fx.client();
    const threadId = longest('thread');
    const turnId = longest('turn');
    await client.call('thread.create', { threadId });
    await client.call('turn.start', { threadId, turnId, input: { text: 'go' } });
    await expect.poll(async () => (await client.call('approval.list', { threadId })).approvals.length, { timeout: 10_000 }).toBe(1);
    const [approval] = (await client.call('approval.list', { threadId })).approvals;
    await client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'approve' });
    await expect.poll(async () => (await client.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 10_000 }).toBe('completed');

    const turn = (await client.call('thread.get', { threadId })).thread.turns[turnId]!;
    const ids = [...turn.messages.map((message) => message.id), ...turn.messages.flatMap((message) => message.parts.map((part) => part.id)), ...turn.approvals.map((a) => a.id)];
    expect(ids.length).toBeGreaterThan(5);
    for (const id of ids) expect(id).toMatch(idPattern);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses a worker record whose approval id no client could send', async () => {
    fx = await openApiFixture();
    const client = await fx.client();
    const { threadId } = await client.call('thread.create', {});
    const { turnId } = await client.call('turn.start', { threadId, input: { text: 'go' } });
    const t = turnEvents(turnId);
    const before = fx.store.lastSeq();
    await expect(
      fx.server.engine.submit({
        type: 'turn.record',
        commandId: 'bad-approval',
        threadId,
        turnId,
        events: [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested(longest('a').repeat(2), 'p1', 'c1')],
      }),
    ).rejects.toMatchObject({ code: 'invalid_payload' });
    expect(fx.store.lastSeq()).toBe(before);
  });
});
