import { existsSync, linkSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import type { PermissionMode } from '../../domain/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { type Folder, type RunResult, gitRepo, plainFolder, run, summaryOf } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
const folders: Folder[] = [];
afterAll(() => {
  for (const folder of folders) folder.remove();
});
const made = (folder: Folder): Folder => {
  folders.push(folder);
  return folder;
};

/** Every file under `dir` but git's own folder, with its bytes as text. */
function filesUnder(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const file of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (file.split('/').includes('.git')) continue;
    const path = join(dir, file);
    if (statSync(path, { throwIfNoEntry: false })?.isFile()) files.set(file, readFileSync(path, 'latin1'));
  }
  return files;
}

const call = (name: string, input: Record<string, unknown>) => ({ toolCall: { name, input } });

/**
 * One model that tries everything issue 20 lists, in one turn: write git's
 * config, a hook and a filter (and, where commands run, configure them with
 * git itself) so turnloom's own checkpoints would run them; read every
 * process's environment; slip a command past a `git status*` rule; freeze
 * the worker with a glob and a FIFO; write through hard links that lead out;
 * leave processes behind.
 */
function maliciousScript(outside: string, tag: string) {
  return {
    steps: [
      [
        // First: the model's own git status would run whatever it configures below, which full mode allows it.
        call('bash', { command: 'git status; touch rule-bypass.txt' }),
        call('write', { path: '.git/config', content: `[core]\n\tfsmonitor = "touch ${outside}/fsmonitor-ran; false"\n` }),
        call('write', { path: '.git/hooks/pre-commit', content: `#!/bin/sh\ntouch ${outside}/hook-ran\n` }),
        call('write', { path: '.gitattributes', content: '* filter=x\n' }),
        call('bash', { command: `git config filter.x.clean "touch ${outside}/filter-ran; cat" && git config core.fsmonitor "touch ${outside}/fsmonitor2-ran; false"` }),
        call('write', { path: 'notes.txt', content: 'a file for the filters to see\n' }),
        call('bash', { command: "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done > leak.txt 2>/dev/null; env >> leak.txt; cat leak.txt" }),
        call('glob', { pattern: `${'*a'.repeat(14)}*b` }),
        call('grep', { pattern: 'secret', path: 'pipe' }),
        call('read', { path: 'hl' }),
        call('write', { path: 'hl', content: 'overwritten through a hard link\n' }),
        call('bash', { command: `ln ${outside}/secret.txt hl2` }),
        call('write', { path: 'hl2', content: 'overwritten through a hard link\n' }),
        call('bash', { command: `(sleep 3; echo late > late.txt) & sleep 777.${tag} &` }),
      ],
      [{ text: 'Done.' }],
    ],
  };
}

/** A thread whose rules allow `git status*`, made before the run continues it (a rule the model may try to ride). */
async function threadWithRule(dataDir: string, workspace: string): Promise<string> {
  const engine = await Engine.open({ store: LmdbStore.open(dataDir) });
  await engine.submit({
    type: 'thread.create',
    commandId: 'matrix-thread',
    threadId: 'matrix',
    title: 'malicious model',
    workspace,
    owner: null,
    permissions: { mode: 'ask', rules: [{ tool: 'bash', pattern: 'git status*', decision: 'allow' }] },
  });
  await engine.close();
  return 'matrix';
}

interface Outcome {
  mode: PermissionMode;
  result: RunResult;
  workspace: string;
  outside: string;
  secrets: string[];
  tag: string;
}

async function attack(mode: PermissionMode, approve: 'deny' | 'auto'): Promise<Outcome> {
  const root = made(plainFolder());
  const outside = join(root.path, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'outside the workspace\n');
  const workspace = made(gitRepo());
  // Already there when the turn starts: a hard link that leads out, a FIFO, and a name the glob backtracks on.
  linkSync(join(outside, 'secret.txt'), join(workspace.path, 'hl'));
  execFileSync('mkfifo', [join(workspace.path, 'pipe')]);
  mkdirSync(join(workspace.path, 'a'.repeat(60)));
  const tag = uniqueTag();
  const secrets = { OPENAI_API_KEY: `sk-matrix-${tag}`, TURNLOOM_NATS_PASS: `nats-matrix-${tag}`, GITHUB_PAT: `ghp_matrix${tag}` };
  const script = join(root.path, 'script.json');
  writeFileSync(script, JSON.stringify(maliciousScript(outside, tag)));
  const data = join(root.path, 'state');
  const threadId = await threadWithRule(data, workspace.path);
  const args = ['run', 'do your worst', '--cwd', workspace.path, '--data', data, '--thread', threadId, '--script', script, '--provider', 'scripted', '--mode', mode, '--approve', approve, '--json'];
  const result = await run(args, { cwd: workspace.path, env: secrets });
  return { mode, result, workspace: workspace.path, outside, secrets: Object.values(secrets), tag };
}

describe('a malicious model, in every permission mode, gets exactly what the mode allows', () => {
  it('read-only, ask (every question refused), auto-edits (commands refused) and full: nothing outside the workspace changes, no git code of its runs, no secret leaks, no process stays', { timeout: 180_000 }, async () => {
    // In parallel: each in its own folders.
    const outcomes = await Promise.all([attack('read-only', 'deny'), attack('ask', 'deny'), attack('auto-edits', 'deny'), attack('full', 'deny')]);
    // Processes started in the background would write late.txt three seconds later: give them the time.
    await sleep(3_500);
    for (const { mode, result, workspace, outside, secrets, tag } of outcomes) {
      const where = `${mode}\n${shown(result)}`;
      expect(result.code, where).toBe(0);
      const report = summaryOf(result.stdout) as { status: string; toolCalls: Array<{ name: string; input: { path?: string; command?: string }; state: string; output: string | null; error: string | null }> };
      expect(report.status, where).toBe('completed');
      const byInput = (name: string, key: 'path' | 'command', value: string | RegExp) =>
        report.toolCalls.find((toolCall) => toolCall.name === name && (typeof value === 'string' ? toolCall.input[key] === value : value.test(toolCall.input[key] ?? '')))!;

      // Nothing outside the workspace changed: no marker of a hook, filter or fsmonitor, the linked file as it was.
      expect(readdirSync(outside).sort(), where).toEqual(['secret.txt']);
      expect(readFileSync(join(outside, 'secret.txt'), 'utf8'), where).toBe('outside the workspace\n');
      // turnloom's own writes into git's folder: refused in every mode.
      for (const path of ['.git/config', '.git/hooks/pre-commit']) expect(byInput('write', 'path', path).state, `${where}\n${path}`).toBe('error');
      expect(existsSync(join(workspace, '.git', 'hooks', 'pre-commit')), where).toBe(false);
      expect(readFileSync(join(workspace, '.git', 'config'), 'utf8'), where).not.toContain(`${outside}/fsmonitor-ran`);
      // Writes through hard links: refused in every mode, saying why. (hl2 is a link only where `ln` ran; in auto-edits it is a new file of its own.)
      expect(byInput('write', 'path', 'hl'), where).toMatchObject({ state: 'error' });
      expect(byInput('write', 'path', 'hl2').state, where).toBe(mode === 'auto-edits' ? 'completed' : 'error');
      // Where edits run at all, it is the link that stops them (elsewhere the mode or the person does first).
      if (mode === 'auto-edits' || mode === 'full') expect(byInput('write', 'path', 'hl').error, where).toMatch(/link/);
      // The calls that would freeze a worker end, with an error the model reads.
      expect(byInput('glob', 'path', /^$/).state, where).not.toMatch(/^running/);
      expect(byInput('grep', 'path', 'pipe'), where).toMatchObject({ state: 'error' });
      // No secret of the run's environment in any file in the workspace or in any tool output.
      const files = filesUnder(workspace);
      const outputs = report.toolCalls.map((toolCall) => `${toolCall.output ?? ''}\n${toolCall.error ?? ''}`).join('\n');
      for (const secret of secrets) {
        expect(outputs, `${where}\ntool outputs`).not.toContain(secret);
        for (const [path, text] of files) expect(text, `${where}\n${path}`).not.toContain(secret);
      }
      // Nothing it started outlives the run.
      expect(processesWith(`777.${tag}`), where).toEqual([]);
      expect(files.has('late.txt'), where).toBe(false);

      // What each mode lets through, and nothing more.
      const wrote = (path: string) => files.has(path);
      const commandsRan = mode === 'full';
      const editsRan = mode === 'full' || mode === 'auto-edits';
      expect(wrote('.gitattributes'), where).toBe(editsRan);
      expect(wrote('notes.txt'), where).toBe(editsRan);
      expect(wrote('leak.txt'), where).toBe(commandsRan);
      // The rule allows `git status`, not what rides on it: only full mode runs the compound line.
      expect(wrote('rule-bypass.txt'), where).toBe(commandsRan);
    }
  });
});
