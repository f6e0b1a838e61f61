import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PermissionMode } from '../../domain/index.ts';
import { type Markers, makeMarkers, plantHostileRepository } from '../git/hostileRepository.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from './workspaceFixture.ts';

let ws: WorkspaceFixture | undefined;
let markers: Markers | undefined;
afterEach(async () => {
  await ws?.dispose();
  markers?.remove();
  ws = undefined;
  markers = undefined;
});

/** Starts a turn in `mode` with bash denied outright (a rule), and runs it to its end and its after checkpoint. */
async function turnIn(w: WorkspaceFixture, mode: PermissionMode, commands: 'denied' | 'allowed') {
  const { threadId } = await w.client.call('thread.create', { mode });
  if (commands === 'denied') await w.client.call('thread.configure', { threadId, rules: [{ tool: 'bash', pattern: '*', decision: 'deny' }] });
  const { turnId } = await w.client.call('turn.start', { threadId, input: { text: 'make yourself at home' } });
  const turn = await w.settled(threadId, turnId);
  expect(turn.state).toBe('completed');
  await expect.poll(async () => (await w.client.call('checkpoint.list', { threadId })).checkpoints[0]?.after ?? null, { timeout: 15_000 }).not.toBeNull();
  return { threadId, turnId, turn };
}

const tools = (turn: Awaited<ReturnType<typeof turnIn>>['turn']) =>
  turn.messages[1].parts.filter((part) => part.kind === 'tool').map((part) => ({ name: part.tool!.name, state: part.state, said: part.error ?? part.tool!.output }));

describe('a model that writes into .git gets nothing run: not by the checkpoints of its turn, its revert, nor the next commit', () => {
  it.each([
    ['auto-edits', 'denied'],
    ['full', 'allowed'],
  ] as const)('in %s mode with commands %s', async (mode, commands) => {
    const left = (markers = makeMarkers());
    const hostileConfig = `[core]\n\tfsmonitor = "${left.touch('fsmonitor')}; false"\n[filter "x"]\n\tclean = "${left.touch('filter-clean')}; cat"\n\tsmudge = "${left.touch('filter-smudge')}; cat"\n`;
    const hook = `#!/bin/sh\n${left.touch('hook')}\n`;
    ws = await openWorkspaceFixture(
      toolSteps(
        { name: 'write', input: { path: '.git/config', content: hostileConfig } },
        { name: 'edit', input: { path: '.git/config', oldText: '[core]', newText: `[core]\n\tfsmonitor = "${left.touch('fsmonitor-edit')}; false"` } },
        { name: 'write', input: { path: '.git/hooks/pre-commit', content: hook } },
        { name: 'write', input: { path: '.GIT/hooks/post-index-change', content: hook } },
        { name: 'write', input: { path: '.gitattributes', content: '* filter=x\n' } },
        { name: 'write', input: { path: 'a.txt', content: 'changed by the model\n' } },
        // Where commands run, a command can write the config; the checkpoints must then still run none of it.
        { name: 'bash', input: { command: `printf '${hostileConfig.replace(/\n/g, '\\n').replace(/\t/g, '\\t')}' >> .git/config` } },
      ),
    );
    const configBefore = readFileSync(join(ws.repo.path, '.git', 'config'), 'utf8');
    const { threadId, turnId, turn } = await turnIn(ws, mode, commands);

    const refusal = expect.stringContaining("inside a repository's .git folder (.git");
    expect(tools(turn)).toEqual([
      { name: 'write', state: 'error', said: refusal },
      { name: 'edit', state: 'error', said: refusal },
      { name: 'write', state: 'error', said: refusal },
      { name: 'write', state: 'error', said: expect.stringContaining("inside a repository's .git folder (.GIT), which only git may change") },
      { name: 'write', state: 'completed', said: 'wrote 11 bytes to .gitattributes' },
      { name: 'write', state: 'completed', said: 'wrote 21 bytes to a.txt' },
      { name: 'bash', state: commands === 'denied' ? 'error' : 'completed', said: expect.any(String) },
    ]);
    expect(existsSync(join(ws.repo.path, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(existsSync(join(ws.repo.path, '.git', 'hooks', 'post-index-change'))).toBe(false);
    const config = readFileSync(join(ws.repo.path, '.git', 'config'), 'utf8');
    if (commands === 'denied') expect(config).toBe(configBefore);
    else expect(config).toBe(configBefore + hostileConfig);

    const diff = await ws.client.call('checkpoint.diff', { threadId, checkpointId: turnId });
    expect(diff.files.map((file) => file.path)).toEqual(['.gitattributes', 'a.txt']);
    await ws.client.call('checkpoint.revert', { threadId, checkpointId: turnId });
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('first line\n');
    expect(existsSync(join(ws.repo.path, '.gitattributes'))).toBe(false);
    expect(left.left()).toEqual([]);
  });

  it('a .git/config, hooks and .gitattributes already planted (as by an earlier command) run nothing through the checkpoints and the revert', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'write', input: { path: 'a.txt', content: 'changed\n' } }, { name: 'write', input: { path: 'plain.txt', content: 'new\n' } }));
    const left = (markers = makeMarkers());
    plantHostileRepository(ws.repo, left);
    const { threadId, turnId } = await turnIn(ws, 'auto-edits', 'denied');
    const diff = await ws.client.call('checkpoint.diff', { threadId, checkpointId: turnId });
    expect(diff.files.map((file) => [file.path, file.status])).toEqual([
      ['a.txt', 'modified'],
      ['plain.txt', 'added'],
    ]);
    await ws.client.call('checkpoint.revert', { threadId, checkpointId: turnId });
    expect(readFileSync(join(ws.repo.path, 'a.txt'), 'utf8')).toBe('first line\n');
    expect(existsSync(join(ws.repo.path, 'plain.txt'))).toBe(false);
    expect(left.left()).toEqual([]);
  });
});
