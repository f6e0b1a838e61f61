import { z } from 'zod';
import type { ToolResult } from '../../domain/index.ts';
import { CappedOutput } from './capOutput.ts';
import { CommandProcess } from './commandProcess.ts';
import { defineTool, type ToolContext } from './toolDefinition.ts';

const maxTimeoutMs = 600_000;

const input = z
  .object({
    command: z.string().min(1).describe('A bash command line, run in the workspace root.'),
    timeoutMs: z.number().int().positive().optional().describe(`Kill the command after this many milliseconds (at most ${maxTimeoutMs}).`),
    keepRunning: z
      .boolean()
      .optional()
      .describe(
        'Leave what the command starts in the background (a server the user asked for, `npm run dev > dev.log 2>&1 &`) running after it returns, until the turn ends. Asks for approval unless the mode is full. What it prints after the call returns is dropped: send it to a file.',
      ),
  })
  .strict();

/** How long a command that has exited gets for its last output to drain, before pipes a background child holds are dropped. */
const drainMs = 100;

/**
 * Runs `command` (see `CommandProcess`) and reports its output and how it
 * ended. Resolves when the shell is done, not when every pipe closes: a
 * grandchild may hold them open for ever. What the command left in the
 * background ends with the call, unless `keep`: then it belongs to the
 * call's turn, and ends when the turn does.
 */
async function runBash(command: string, keep: boolean, timeoutMs: number, context: ToolContext): Promise<ToolResult> {
  const { signal, maxOutputChars } = context;
  const settings = await context.commandSettings();
  return new Promise((resolve) => {
    const output = new CappedOutput(maxOutputChars);
    let killedBecause: string | null = null;
    let ending: { line: string; isError: boolean; kept: boolean } | null = null;
    let drain: NodeJS.Timeout | undefined;
    let settled = false;

    const finish = (): void => {
      if (settled || ending === null) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drain);
      signal.removeEventListener('abort', onAbort);
      if (ending.kept) context.kept.keep(context.turnId, running);
      else running.release();
      const body = output.text(maxOutputChars - ending.line.length - 1);
      resolve({ output: body === '' || body.endsWith('\n') ? body + ending.line : `${body}\n${ending.line}`, isError: ending.isError });
    };
    // One pipe for both streams, as a terminal would show them: two pipes read by Node lose their relative order.
    const running = new CommandProcess(`exec 2>&1\n${command}`, keep, settings, {
      output: (chunk) => {
        if (settled) return;
        output.push(chunk);
        context.onOutput?.(chunk);
      },
      ended: ({ code, signal: exitSignal }) => {
        if (killedBecause !== null) ending = { line: `killed: ${killedBecause}`, isError: true, kept: false };
        else if (code !== null) ending = { line: `exit code ${code}`, isError: code !== 0, kept: keep };
        else ending = { line: `killed by ${exitSignal}`, isError: true, kept: keep };
        if (killedBecause !== null) finish();
        else drain = setTimeout(finish, drainMs);
      },
      failed: (error) => {
        ending = { line: `could not run bash: ${error.message}`, isError: true, kept: false };
        finish();
      },
      closed: finish,
    });
    const kill = (reason: string): void => {
      if (killedBecause !== null || ending !== null) return;
      killedBecause = reason;
      void running.stop();
    };
    const timer = setTimeout(() => kill(`timed out after ${timeoutMs} ms`), timeoutMs);
    const onAbort = (): void => kill('interrupted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export const bashTool = defineTool({
  name: 'bash',
  description:
    'Run a bash command in the workspace root; prints its output (stdout and stderr together), then its exit code. It gets no input. When it returns, everything it started is killed, background jobs included, unless keepRunning is set; when its timeout runs out, everything is killed.',
  kind: 'command',
  input,
  subject: ({ command }) => command,
  outlivesCall: ({ keepRunning }) => keepRunning === true,
  // Every command starts in the workspace root (the command line may cd elsewhere, and shows it).
  preview: async ({ command }) => ({ kind: 'command', command, cwd: '.' }),
  run: ({ command, keepRunning, timeoutMs }, context) => runBash(command, keepRunning === true, Math.min(timeoutMs ?? context.bashTimeoutMs, maxTimeoutMs), context),
});
