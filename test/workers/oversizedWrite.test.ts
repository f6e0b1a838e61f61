import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

describe('a tool call larger than the NATS server takes', () => {
  it('is not run: the model reads why as the call’s error result, and the turn goes on', { timeout: 60_000 }, async () => {
    // A tool call whose input alone is over twice the server's max_payload: recorded whole, it could not travel.
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'big.txt', content: 'x'.repeat(2_500_000) } }), { natsUrl: inject('natsUrl') });
    const { threadId } = await ws.client.call('thread.create', { mode: 'full' });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'write it' } });
    // The turn's view is too large for thread.get (the call's streamed input is in it): the log says how it ended.
    const settledBy = async () => {
      const types: string[] = [];
      for (let after = 0; ; ) {
        const page = await ws!.client.call('thread.events', { threadId, after, limit: 50 });
        types.push(...page.events.map((wire) => wire.event.type));
        if (page.events.length === 0 || page.events.at(-1)!.seq >= page.lastSeq) return types.find((type) => /^turn\.(completed|failed|interrupted)$/.test(type)) ?? null;
        after = page.events.at(-1)!.seq;
      }
    };
    await expect.poll(settledBy, { timeout: 30_000, interval: 100 }).toBe('turn.completed');
    void turnId;
    const result = ws.requests.at(-1)!.messages.findLast((message) => message.role === 'tool');
    expect(result).toMatchObject({ role: 'tool', isError: true });
    expect(result?.role === 'tool' && result.output).toMatch(/^The tool did not run: this call's input is 2\.4 MB, over the 384 KB one call may carry; do it in smaller pieces/);
    expect(existsSync(join(ws.repo.path, 'big.txt'))).toBe(false);
  });
});
