import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync as realpath, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { processesWith, uniqueTag } from '../support/processes.ts';
import { TempFolders, run, toolCall, toolsAt } from './toolFixture.ts';

const bashChild = fileURLToPath(new URL('../support/bashChild.ts', import.meta.url));
const never = new AbortController().signal;

describe.each([
  { isolate: true, label: 'isolated' },
  { isolate: false, label: 'without isolation' },
])('what a bash call leaves running ($label)', ({ isolate }) => {
  const folders = new TempFolders();
  let root: string;
  let tag: string;
  beforeEach(() => {
    root = folders.make();
    tag = uniqueTag();
  });
  afterEach(() => folders.removeAll());

  it('ends when the call ends: background jobs, subshells and processes that left the group with setsid', async () => {
    const tools = toolsAt(root, { isolate });
    const command = `(sleep 3; echo late > late.txt) & sleep 777.${tag} & setsid sleep 776.${tag} > /dev/null 2>&1 & echo started`;
    expect(await run(tools, 'bash', { command })).toEqual({ output: 'started\nexit code 0', isError: false });
    await expect.poll(() => [...processesWith(`777.${tag}`), ...processesWith(`776.${tag}`)], { timeout: 5_000 }).toEqual([]);
    await sleep(3_500);
    expect(existsSync(path.join(root, 'late.txt'))).toBe(false);
  });

  it('with keepRunning, lives on after the call, until its turn ends; another turn ending does not touch it', async () => {
    const tools = toolsAt(root, { isolate });
    const command = `sleep 778.${tag} > /dev/null 2>&1 & echo serving`;
    expect(await tools.execute(toolCall('bash', { command, keepRunning: true }), never, 'turn-1')).toEqual({ output: 'serving\nexit code 0', isError: false });
    await sleep(300);
    expect(processesWith(`778.${tag}`)).toHaveLength(1);
    await tools.endTurn('turn-2');
    expect(processesWith(`778.${tag}`)).toHaveLength(1);
    await tools.endTurn('turn-1');
    await expect.poll(() => processesWith(`778.${tag}`), { timeout: 5_000 }).toEqual([]);
  });

  it('with keepRunning, still reports a failing exit code, and a timeout still kills everything', async () => {
    const tools = toolsAt(root, { isolate });
    expect(await tools.execute(toolCall('bash', { command: 'echo no; exit 3', keepRunning: true }), never, 'turn-1')).toEqual({ output: 'no\nexit code 3', isError: true });
    const timedOut = await tools.execute(toolCall('bash', { command: `sleep 779.${tag} & sleep 30`, keepRunning: true, timeoutMs: 300 }), never, 'turn-1');
    expect(timedOut).toEqual({ output: 'killed: timed out after 300 ms', isError: true });
    await expect.poll(() => processesWith(`779.${tag}`), { timeout: 5_000 }).toEqual([]);
  });

  it('is asked about in the call’s class: keepRunning outlives the call', () => {
    const tools = toolsAt(root, { isolate });
    expect(tools.classify(toolCall('bash', { command: 'npm run dev', keepRunning: true }))).toEqual({ kind: 'command', subject: 'npm run dev', outlivesCall: true });
    expect(tools.classify(toolCall('bash', { command: 'npm run dev' }))).toEqual({ kind: 'command', subject: 'npm run dev' });
  });

  it('ends, kept or not, when the process running the tools exits', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', bashChild, root, String(isolate), `sleep 780.${tag} > /dev/null 2>&1 & echo up`, 'exit'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    expect(out).toContain('up\nexit code 0');
    await expect.poll(() => processesWith(`780.${tag}`), { timeout: 5_000 }).toEqual([]);
  });
});

describe('bash isolation', () => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make();
  });
  afterEach(() => folders.removeAll());

  it('is available on this machine (unprivileged user, PID and mount namespaces): the tests below need it', async () => {
    expect(await toolsAt(root).isolation()).toEqual({ isolated: true });
    expect(await toolsAt(root, { isolate: false }).isolation()).toEqual({ isolated: false, reason: 'turned off' });
  });

  it('shows a command only the processes of its own call: not the worker, not its environment', async () => {
    const { output } = await run(toolsAt(root), 'bash', { command: 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < $f; echo; done; tr "\\0" "\\n" < /proc/$PPID/environ' });
    expect(output).not.toContain('vitest');
    expect(output).not.toContain(process.execPath);
    expect(output).toMatch(/environ: Permission denied\nexit code 1$/);
  });

  it('runs as the user, in the workspace, with the network', async () => {
    const server = createServer((socket) => socket.once('data', (data) => received.push(data.toString())));
    const received: string[] = [];
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const { output } = await run(toolsAt(root), 'bash', { command: `id -u; id -g; pwd -P; echo hello > /dev/tcp/127.0.0.1/${port}` });
      expect(output).toBe(`${process.getuid!()}\n${process.getgid!()}\n${realpath(root)}\nexit code 0`);
      await expect.poll(() => received, { timeout: 5_000 }).toEqual(['hello\n']);
    } finally {
      server.close();
    }
  });

  it('hides the hidden paths: empty and read-only to a command, untouched outside; one holding the workspace is left alone', async () => {
    const data = folders.make('turnloom-hidden-');
    writeFileSync(path.join(data, 'secret.txt'), 'the thread log');
    const workspaceInData = path.join(data, 'ws');
    mkdirSync(workspaceInData);
    mkdirSync(path.join(data, 'inner'));
    const tools = toolsAt(root, { hiddenPaths: [data, path.join(data, 'inner'), path.join(root, 'missing')] });
    const { output } = await run(tools, 'bash', { command: `ls -A ${data}; cat ${data}/secret.txt; touch ${data}/planted` });
    expect(output).not.toContain('the thread log');
    expect(output).toMatch(/Read-only file system\nexit code 1$/);
    expect(readdirSync(data).sort()).toEqual(['inner', 'secret.txt', 'ws']);
    const inside = await run(toolsAt(workspaceInData, { hiddenPaths: [data] }), 'bash', { command: 'pwd -P; touch made' });
    expect(inside).toEqual({ output: `${realpath(workspaceInData)}\nexit code 0`, isError: false });
  });

  it('shows a hidden file (credentials) empty, and writes to it go nowhere', async () => {
    const secrets = folders.make('turnloom-hidden-');
    const creds = path.join(secrets, 'worker.creds');
    writeFileSync(creds, 'SUAM-the-seed');
    const { output } = await run(toolsAt(root, { hiddenPaths: [creds] }), 'bash', { command: `cat ${creds}; echo planted > ${creds}; cat ${creds}; ls ${secrets}` });
    expect(output).toBe('worker.creds\nexit code 0');
    expect(readFileSync(creds, 'utf8')).toBe('SUAM-the-seed');
  });

  it('refuses commands once a hidden folder was moved away from its path or replaced, rather than show it', async () => {
    const outside = folders.make('turnloom-hidden-');
    const data = path.join(outside, 'share', 'turnloom');
    mkdirSync(data, { recursive: true });
    writeFileSync(path.join(data, 'secret.txt'), 'the thread log');
    const tools = toolsAt(root, { hiddenPaths: [data] });
    const moved = await run(tools, 'bash', { command: `mv ${outside}/share ${outside}/moved && mkdir -p ${data} && cat ${outside}/moved/turnloom/secret.txt` });
    expect(moved.output).not.toContain('the thread log');
    const next = await run(tools, 'bash', { command: `cat ${outside}/moved/turnloom/secret.txt` });
    expect(next).toEqual({ output: expect.stringMatching(/^commands are refused: .* has been moved or replaced/), isError: true });
  });

  it('dies with the process running the tools, kill -9 included: the call and what a call kept', async () => {
    const tag = uniqueTag();
    const child = spawn(process.execPath, ['--import', 'tsx', bashChild, root, 'true', `sleep 781.${tag} > /dev/null 2>&1 & (sleep 3; echo late > late.txt) & echo up`, 'then', `sleep 782.${tag}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await expect.poll(() => processesWith(`782.${tag}`).length, { timeout: 15_000 }).toBe(1);
    expect(processesWith(`781.${tag}`)).toHaveLength(1);
    expect(out).toContain('up\nexit code 0');
    child.kill('SIGKILL');
    await expect.poll(() => [...processesWith(`781.${tag}`), ...processesWith(`782.${tag}`)], { timeout: 5_000 }).toEqual([]);
    await sleep(3_500);
    expect(existsSync(path.join(root, 'late.txt'))).toBe(false);
  });
});
