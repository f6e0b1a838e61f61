import { linkSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
let outside: string | undefined;
afterEach(async () => {
  await ws?.dispose();
  if (outside) rmSync(outside, { recursive: true, force: true });
  ws = undefined;
  outside = undefined;
});

describe('a model with a hard link to a file outside the workspace cannot change that file', () => {
  it.each(['auto-edits', 'full'] as const)('in %s mode, commands denied: it reads through the link, and its write and edit are refused saying why', async (mode) => {
    outside = mkdtempSync(join(tmpdir(), 'turnloom-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'secret\n');
    ws = await openWorkspaceFixture(
      toolSteps(
        { name: 'read', input: { path: 'hl' } },
        { name: 'write', input: { path: 'hl', content: 'overwritten by the model\n' } },
        { name: 'edit', input: { path: 'hl', oldText: 'secret', newText: 'edited by the model' } },
      ),
    );
    // As an earlier command (`ln ../outside/secret.txt hl`) would have left it.
    linkSync(join(outside, 'secret.txt'), join(ws.repo.path, 'hl'));
    const { threadId } = await ws.client.call('thread.create', { mode });
    await ws.client.call('thread.configure', { threadId, rules: [{ tool: 'bash', pattern: '*', decision: 'deny' }] });
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'go' } });
    const turn = await ws.settled(threadId, turnId);
    expect(turn.state).toBe('completed');
    const refused = 'hl has 2 hard links, so writing it would also change the file under its other names, which may be outside the workspace; write and edit refuse it';
    expect(turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => [part.tool!.name, part.state, part.error ?? part.tool!.output])).toEqual([
      ['read', 'completed', '     1\tsecret\n'],
      ['write', 'error', refused],
      ['edit', 'error', refused],
    ]);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
  });
});
