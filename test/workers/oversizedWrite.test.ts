import { afterEach, describe, expect, inject, it } from 'vitest';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

describe('a worker write larger than the NATS server takes', () => {
  it('fails the turn, saying why, instead of retrying it forever', { timeout: 60_000 }, async () => {
    // A tool call whose input alone is twice the server's max_payload: the write that records it cannot travel.
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'big.txt', content: 'x'.repeat(2 * 1024 * 1024) } }), { natsUrl: inject('natsUrl') });
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'write it' } });
    await expect.poll(async () => (await ws!.turn(threadId, turnId)).state, { timeout: 20_000, interval: 100 }).toBe('failed');
    expect((await ws.turn(threadId, turnId)).error).toMatch(/max_payload/);
  });
});
