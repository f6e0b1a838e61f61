import { spawn } from 'node:child_process';
import { z } from 'zod';
import type { ToolResult } from '../../domain/index.ts';
import { CappedOutput } from './capOutput.ts';
import { scrubbedEnv } from './scrubbedEnv.ts';
import { defineTool, type ToolContext } from './toolDefinition.ts';

const maxTimeoutMs = 600_000;

const input = z
  .object({
    command: z.string().min(1).describe('A bash command line, run in the workspace root.'),
    timeoutMs: z.number().int().positive().optional().describe(`Kill the command after this many milliseconds (at most ${maxTimeoutMs}).`),
  })
  .strict();

/** How long a command that has exited gets for its last output to drain, before pipes a background child holds are dropped. */
const drainMs = 100;
/** How long the group gets to stop on SIGTERM before SIGKILL. */
const termGraceMs = 200;

/** Signals every process in the group; a group that has already gone is the point, not an error. */
function signalGroup(leader: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-leader, signal);
  } catch {
    // ESRCH: nobody left in the group.
  }
}

/**
 * Runs `command` as the leader of its own process group, so a timeout or an
 * interrupt can stop everything it started. Resolves when the leader is gone,
 * not when every pipe closes: a grandchild may hold them open for ever.
 */
function runBash(command: string, timeoutMs: number, { workspace, signal, env, maxOutputChars }: ToolContext): Promise<ToolResult> {
  return new Promise((resolve) => {
    const output = new CappedOutput(maxOutputChars);
    // One pipe for both streams, as a terminal would show them: two pipes read by Node lose their relative order.
    const script = `exec 2>&1\n${command}`;
    const child = spawn('/bin/bash', ['-c', script], { cwd: workspace.realRoot, detached: true, stdio: ['ignore', 'pipe', 'ignore'], env: scrubbedEnv(env) });
    let killedBecause: string | null = null;
    let ending: { line: string; isError: boolean } | null = null;
    let drain: NodeJS.Timeout | undefined;
    let settled = false;

    const finish = (): void => {
      if (settled || ending === null) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drain);
      signal.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      const body = output.text(maxOutputChars - ending.line.length - 1);
      resolve({ output: body === '' || body.endsWith('\n') ? body + ending.line : `${body}\n${ending.line}`, isError: ending.isError });
    };
    const kill = (reason: string): void => {
      if (killedBecause !== null || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      killedBecause = reason;
      signalGroup(child.pid, 'SIGTERM');
      const leader = child.pid;
      setTimeout(() => signalGroup(leader, 'SIGKILL'), termGraceMs);
    };
    const timer = setTimeout(() => kill(`timed out after ${timeoutMs} ms`), timeoutMs);
    const onAbort = (): void => kill('interrupted');
    signal.addEventListener('abort', onAbort, { once: true });

    child.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
    child.on('error', (error) => {
      ending = { line: `could not run bash: ${error.message}`, isError: true };
      finish();
    });
    child.on('exit', (code, exitSignal) => {
      if (killedBecause !== null) ending = { line: `killed: ${killedBecause}`, isError: true };
      else if (code !== null) ending = { line: `exit code ${code}`, isError: code !== 0 };
      else ending = { line: `killed by ${exitSignal}`, isError: true };
      if (killedBecause !== null) finish();
      else drain = setTimeout(finish, drainMs);
    });
    child.on('close', finish);
  });
}

export const bashTool = defineTool({
  name: 'bash',
  description:
    'Run a bash command in the workspace root; prints its output (stdout and stderr together), then its exit code. It gets no input, and is killed, with everything it started, when its timeout runs out.',
  kind: 'command',
  input,
  subject: ({ command }) => command,
  run: ({ command, timeoutMs }, context) => runBash(command, Math.min(timeoutMs ?? context.bashTimeoutMs, maxTimeoutMs), context),
});
