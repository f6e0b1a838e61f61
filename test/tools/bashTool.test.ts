import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { processesWith, uniqueTag } from '../support/processes.ts';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TempFolders, run, toolCall, toolsAt } from './toolFixture.ts';

/** Waits until `check` holds, up to `ms`; the machine is shared, so deadlines are generous. */
async function eventually(check: () => boolean, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(25)) if (check()) return true;
  return check();
}

// Commands behave the same, output, exit codes, timeouts and interrupts, whether or not they run isolated.
describe.each([
  { isolate: true, label: 'isolated' },
  { isolate: false, label: 'without isolation' },
])('bash ($label)', ({ isolate }) => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make();
  });
  afterEach(() => folders.removeAll());
  const at = (options: Parameters<typeof toolsAt>[1] = {}) => toolsAt(root, { isolate, ...options });

  it('prints stdout and stderr together, then the exit code; non-zero is an error', async () => {
    const tools = at();
    expect(await run(tools, 'bash', { command: 'echo out; echo err >&2; echo again' })).toEqual({ output: 'out\nerr\nagain\nexit code 0', isError: false });
    expect(await run(tools, 'bash', { command: 'printf partial; exit 7' })).toEqual({ output: 'partial\nexit code 7', isError: true });
    expect(await run(tools, 'bash', { command: 'true' })).toEqual({ output: 'exit code 0', isError: false });
    expect(await run(tools, 'bash', { command: 'true', timeoutMs: 3_600_000 })).toEqual({ output: 'exit code 0', isError: false });
  });

  it('says how a shell killed by a signal ended; isolated, as 128 + n (as bash reports a child): the status passes through the namespace init, which can only exit', async () => {
    expect(await run(at(), 'bash', { command: 'echo bye; kill -TERM $$' })).toEqual({ output: `bye\n${isolate ? 'exit code 143' : 'killed by SIGTERM'}`, isError: true });
  });

  it('runs in the workspace root, with no input', async () => {
    const tools = at();
    expect((await run(tools, 'bash', { command: 'pwd -P' })).output).toBe(`${realpathSync(root)}\nexit code 0`);
    expect(await run(tools, 'bash', { command: 'cat' })).toEqual({ output: 'exit code 0', isError: false });
    await run(tools, 'bash', { command: 'echo made > made.txt' });
    expect(readFileSync(path.join(root, 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('keeps secrets and the runtime settings out of the environment', async () => {
    const env = { ...process.env, OPENAI_API_KEY: 'sk-secret', ANTHROPIC_BASE_URL: 'http://x', TURNLOOM_DATA: '/data', GITHUB_TOKEN: 'ghp', DB_PASSWORD: 'pw', MY_SECRET_THING: 's', KEEP_ME: 'kept' };
    const command = 'echo ${OPENAI_API_KEY:-none} ${ANTHROPIC_BASE_URL:-none} ${TURNLOOM_DATA:-none} ${GITHUB_TOKEN:-none} ${DB_PASSWORD:-none} ${MY_SECRET_THING:-none} ${KEEP_ME:-none}';
    expect((await run(at({ env }), 'bash', { command })).output).toBe('none none none none none none kept\nexit code 0');
  });

  it('keeps the common secret names out too, and any variable holding a URL with a password; ordinary settings stay', async () => {
    const secrets = {
      SSH_PRIVATE_KEY: 'k',
      DEPLOY_KEY: 'k',
      MYSQL_PWD: 'k',
      NATS_PASS: 'k',
      GITHUB_PAT: 'k',
      SSH_AUTH_SOCK: '/tmp/agent',
      NPM_TOKEN: 'k',
      PGPASSWORD: 'k',
      AWS_ACCESS_KEY_ID: 'k',
      AWS_PROFILE: 'prod',
      GOOGLE_APPLICATION_CREDENTIALS: '/keys/sa.json',
      SENTRY_DSN: 'https://k@sentry.example/1',
      npm_config__auth: 'k',
      DATABASE_URL: 'postgres://app:hunter2@db.example/app',
      HTTPS_PROXY: 'http://me:pw@proxy.example:3128',
    };
    const kept = { PASSENGER_APP_ENV: 'kept', OLDPWD: '/tmp', KEYBOARD: 'us', DATABASE_HOST: 'db.example', PLAIN_URL: 'https://example.com/a:b@c', KUBECONFIG: '/home/me/.kube/config' };
    const env = { PATH: process.env.PATH, ...secrets, ...kept };
    const { output } = await run(at({ env }), 'bash', { command: 'env' });
    const names = output.split('\n').map((line) => line.split('=')[0]);
    for (const name of Object.keys(secrets)) expect(names, name).not.toContain(name);
    for (const [name, value] of Object.entries(kept)) expect(output, name).toContain(`${name}=${value}`);
  });

  it('cuts long output keeping its start and end, and always keeps the exit line', async () => {
    const { output, isError } = await run(at({ maxOutputChars: 1_000 }), 'bash', { command: 'echo START; head -c 200000 /dev/zero | tr "\\0" a; echo; echo END' });
    expect(isError).toBe(false);
    expect(output.length).toBeLessThanOrEqual(1_000);
    expect(output).toMatch(/^START\na+\n\[\.\.\. \d+ characters cut \.\.\.\]\na+\nEND\nexit code 0$/);
    expect(Number(/\[\.\.\. (\d+) characters cut/.exec(output)?.[1])).toBeGreaterThan(199_000);
  });

  it('kills a command that runs past its timeout', async () => {
    const started = Date.now();
    const { output, isError } = await run(at(), 'bash', { command: 'echo starting; sleep 30', timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(isError).toBe(true);
    expect(output).toBe('starting\nkilled: timed out after 300 ms');
  });

  it('escalates to SIGKILL when the command ignores SIGTERM', async () => {
    const started = Date.now();
    const { output } = await run(at(), 'bash', { command: "trap '' TERM; echo stubborn; sleep 30", timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(output).toBe('stubborn\nkilled: timed out after 300 ms');
  });

  it('returns when the command exits, though a background child still holds its output pipe', async () => {
    const started = Date.now();
    const result = await run(at(), 'bash', { command: `sleep 30.${uniqueTag()} & echo done` });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result).toEqual({ output: 'done\nexit code 0', isError: false });
  });

  it('on abort kills the whole process group and resolves promptly, pipes held open by children or not', async () => {
    const tools = at();
    const controller = new AbortController();
    // Each `sleep` holds the output pipe; the subshell ignores SIGTERM, so only SIGKILL stops it.
    // Commands may run in a PID namespace of their own, so they are found by a unique argument, not by the pids they see.
    const tag = uniqueTag();
    const sleeps = [1, 2, 3].map((n) => `31.${tag}${n}`);
    const command = `sleep ${sleeps[0]} & sleep ${sleeps[1]} & (trap '' TERM; sleep ${sleeps[2]}) & echo started; wait`;
    const result = tools.execute(toolCall('bash', { command }), controller.signal);
    const running = () => sleeps.filter((argument) => processesWith(argument).length > 0);
    expect(await eventually(() => running().length === 3, 10_000)).toBe(true);
    await sleep(300);
    const abortedAt = performance.now();
    controller.abort();
    const { output, isError } = await result;
    const latencyMs = performance.now() - abortedAt;
    console.log(`bash abort: resolved ${latencyMs.toFixed(1)} ms after abort`);
    expect(latencyMs).toBeLessThan(2_000);
    expect(isError).toBe(true);
    expect(output).toBe('started\nkilled: interrupted');
    // Orphans are reaped by PID 1, which in some sandboxes takes a while.
    expect(await eventually(() => running().length === 0, 15_000), `still alive: ${running().join(', ')}`).toBe(true);
  });

  it('does not start a command when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await at().execute(toolCall('bash', { command: 'touch ran' }), controller.signal)).toEqual({ output: 'interrupted', isError: true });
    await sleep(100);
    expect(existsSync(path.join(root, 'ran'))).toBe(false);
  });
});
