import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { type Folder, type RunResult, gitRepo, plainFolder, run, startRun, summaryOf } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

let cleanup: Array<() => void> = [];
afterEach(() => {
  for (const step of cleanup.reverse()) step();
  cleanup = [];
});
const made = (folder: Folder): Folder => {
  cleanup.push(() => folder.remove());
  return folder;
};

/** Every file under `dir` but the repository's own folder, with its text. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => !file.split('/').includes('.git') && statSync(join(dir, file)).isFile())
    .map((file) => ({ path: file, text: readFileSync(join(dir, file), 'latin1') }));
}

const step = (name: string, input: Record<string, unknown>) => [{ toolCall: { name, input } }];

/**
 * The malicious model, in every mode in which a command runs (`full`, and
 * `ask` or `auto-edits` with every call approved): it reads the worker's
 * environment through /proc, starts background work that would write after
 * the turn, and keeps a process running.
 */
describe.each(['full', 'ask', 'auto-edits'] as const)('turnloom run: what a command can reach, in %s mode', (mode) => {
  it('no secret of the run process in any file a command wrote or in any tool output; nothing it started outlives the turn', { timeout: 90_000 }, async () => {
    const workspace = made(gitRepo());
    const data = made(plainFolder());
    const tag = uniqueTag();
    const secrets = { OPENAI_API_KEY: `sk-fake-${tag}`, TURNLOOM_NATS_PASS: `nats-fake-${tag}`, DEPLOY_KEY: `deploy-fake-${tag}` };
    const script = join(data.path, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          step('bash', { command: "tr '\\0' '\\n' < /proc/$PPID/environ > leak-parent.txt; cat leak-parent.txt" }),
          step('bash', { command: "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done > leak-all.txt 2>&1; env > leak-env.txt; cat leak-all.txt leak-env.txt" }),
          step('bash', { command: `(sleep 3; echo late > late.txt) & sleep 777.${tag} &` }),
          step('bash', { command: `(sleep 3; echo late > kept-late.txt) & sleep 778.${tag} > /dev/null 2>&1 &`, keepRunning: true }),
          [{ text: 'Done.' }],
        ],
      }),
    );
    const args = ['run', 'look around', '--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--provider', 'scripted', '--mode', mode, '--approve', 'auto', '--json'];
    const result = await run(args, { cwd: workspace.path, env: secrets });
    expect(result.code, shown(result)).toBe(0);
    const report = summaryOf(result.stdout) as { status: string; toolCalls: Array<{ output: string | null }>; approvals: unknown[] };
    expect(report.status).toBe('completed');
    expect(existsSync(join(workspace.path, 'leak-all.txt'))).toBe(true);
    const outputs = report.toolCalls.map((call) => call.output ?? '').join('\n');
    for (const secret of Object.values(secrets)) {
      expect(outputs, 'tool outputs').not.toContain(secret);
      for (const file of filesUnder(workspace.path)) expect(file.text, file.path).not.toContain(secret);
    }

    // Every command ran: in full mode without asking, otherwise approved (keepRunning asks whatever the rules say).
    expect(report.toolCalls.map((call) => call.output)).toEqual(report.toolCalls.map(() => expect.stringMatching(/exit code \d+$/)));
    expect(report.approvals).toHaveLength(mode === 'full' ? 0 : 4);
    // Whoever approves a kept call is told it stays.
    expect(result.stderr.split('\n').filter((line) => line.includes('until the turn ends'))).toEqual(mode === 'full' ? [] : [expect.stringMatching(/^✔ allowed bash .*sleep 778.* \(keeps running until the turn ends\)/)]);

    await expect.poll(() => [...processesWith(`777.${tag}`), ...processesWith(`778.${tag}`)], { timeout: 5_000 }).toEqual([]);
    await sleep(3_500);
    expect(existsSync(join(workspace.path, 'late.txt')) || existsSync(join(workspace.path, 'kept-late.txt'))).toBe(false);
  });
});

describe('turnloom run with its data folder inside the workspace', () => {
  it('shows a command that folder, and the XDG data home’s, empty and read-only', { timeout: 60_000 }, async () => {
    const workspace = made(gitRepo());
    const home = made(plainFolder());
    const data = join(workspace.path, '.turnloom', 'run');
    const script = join(home.path, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({ steps: [step('bash', { command: `ls -A .turnloom/run ${join(home.path, 'turnloom')}; echo planted > .turnloom/run/planted` }), [{ text: 'Done.' }]] }),
    );
    // A first run leaves threads in the XDG data home too, for the second to find hidden.
    await run(['run', 'first', '--cwd', workspace.path, '--script', script, '--mode', 'full', '--json'], { cwd: workspace.path, env: { XDG_DATA_HOME: home.path } });
    const result = await run(['run', 'look', '--cwd', workspace.path, '--data', data, '--script', script, '--mode', 'full', '--json'], { cwd: workspace.path, env: { XDG_DATA_HOME: home.path } });
    expect(result.code, shown(result)).toBe(0);
    expect(readdirSync(join(home.path, 'turnloom'))).not.toEqual([]);
    const [call] = (summaryOf(result.stdout) as { toolCalls: Array<{ output: string }> }).toolCalls;
    expect(call!.output).toMatch(/^\.turnloom\/run:\n\n.*turnloom:\n.*Read-only file system\nexit code 1$/s);
    expect(readdirSync(data)).toContain('data.mdb');
    expect(readdirSync(data)).not.toContain('planted');
  });
});

describe('turnloom run killed with kill -9 while commands run', () => {
  it('leaves no process behind: neither the running call nor what an earlier call kept', { timeout: 90_000 }, async () => {
    const workspace = made(gitRepo());
    const data = made(plainFolder());
    const tag = uniqueTag();
    const script = join(data.path, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        steps: [step('bash', { command: `sleep 781.${tag} > /dev/null 2>&1 & (sleep 3; echo late > late.txt) &`, keepRunning: true }), step('bash', { command: `sleep 782.${tag}` }), [{ text: 'Done.' }]],
      }),
    );
    const running = startRun(['run', 'serve', '--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--provider', 'scripted', '--mode', 'full'], { cwd: workspace.path });
    cleanup.push(() => running.child.kill('SIGKILL'));
    await expect.poll(() => processesWith(`782.${tag}`).length, { timeout: 30_000 }).toBe(1);
    expect(processesWith(`781.${tag}`)).toHaveLength(1);
    running.child.kill('SIGKILL');
    await running.exited;
    await expect.poll(() => [...processesWith(`781.${tag}`), ...processesWith(`782.${tag}`)], { timeout: 5_000 }).toEqual([]);
    await sleep(3_500);
    expect(existsSync(join(workspace.path, 'late.txt'))).toBe(false);
  });
});

describe('turnloom run where commands cannot be isolated', () => {
  it('says so in one line when it starts, with what to do, and still runs them as process groups', { timeout: 60_000 }, async () => {
    const workspace = made(plainFolder());
    const data = made(plainFolder());
    const script = join(data.path, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [step('bash', { command: 'echo ran' }), [{ text: 'Done.' }]] }));
    // Without setpriv and unshare on the PATH, the probe fails as it would where user namespaces are off.
    const result = await run(['run', 'go', '--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--mode', 'full', '--json'], {
      cwd: workspace.path,
      env: { PATH: '/nonexistent' },
    });
    expect(result.code, shown(result)).toBe(0);
    const warnings = result.stderr.split('\n').filter((line) => line.includes('commands run without isolation'));
    expect(warnings).toEqual([expect.stringMatching(/^turnloom: warning: commands run without isolation \(.*setpriv.*\): a command can read the environment of this process.*\/proc.*docs\/architecture\.md/)]);
    expect((summaryOf(result.stdout) as { toolCalls: Array<{ output: string }> }).toolCalls[0]!.output).toBe('ran\nexit code 0');
  });

  it('says nothing of it where they can', { timeout: 60_000 }, async () => {
    const workspace = made(plainFolder());
    const data = made(plainFolder());
    const script = join(data.path, 'script.json');
    writeFileSync(script, JSON.stringify({ steps: [[{ text: 'Done.' }]] }));
    const result = await run(['run', 'go', '--cwd', workspace.path, '--data', join(data.path, 'state'), '--script', script, '--json'], { cwd: workspace.path });
    expect(result.code, shown(result)).toBe(0);
    expect(result.stderr).not.toContain('isolation');
  });
});
