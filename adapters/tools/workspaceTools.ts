import type { ApprovalPreview, ToolCall, ToolClass, ToolExecutor, ToolResult, ToolSpec } from '../../domain/index.ts';
import { bashTool } from './bashTool.ts';
import { capOutput } from './capOutput.ts';
import { type CommandSettings, KeptCommands } from './commandProcess.ts';
import { HiddenPaths, type Isolation, isolationHere } from './commandSandbox.ts';
import { editTool } from './editTool.ts';
import { globTool } from './globTool.ts';
import { grepTool } from './grepTool.ts';
import { listTool } from './listTool.ts';
import { readTool } from './readTool.ts';
import { type Ripgrep, findRipgrep, ripgrepFor } from './ripgrep.ts';
import { scrubbedEnv } from './scrubbedEnv.ts';
import { type ToolContext, type WorkspaceTool, type WorkspaceToolName, workspaceToolNames } from './toolDefinition.ts';
import { ToolError } from './toolError.ts';
import { unparsedArguments } from './unparsedArguments.ts';
import { Workspace } from './workspacePath.ts';
import { writeTool } from './writeTool.ts';

export interface WorkspaceToolsOptions {
  /** The folder the tools work in; it must exist. */
  root: string;
  /** Longer output keeps its start and end, with a note on what was cut. Default 30 000. */
  maxOutputChars?: number;
  /** Most of a file `read` takes in one call. Default 256 KiB. */
  maxReadBytes?: number;
  /** A command's timeout when the call sets none. Default 2 minutes. */
  bashTimeoutMs?: number;
  /** How long a read-only call (read, list, glob, grep) may run before it ends with an error saying it ran out of time. Default 1 minute. */
  readOnlyTimeoutMs?: number;
  /** What commands run with, less its secrets. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The `rg` glob and grep run; null: none (they then fail saying what to install). Default: the one `@vscode/ripgrep` brings, else `rg` on the PATH of `env`. */
  ripgrep?: string | null;
  /**
   * Run each command in PID and mount namespaces of its own (see
   * `commandSandbox.ts`) when this machine can; `false` runs them as plain
   * process groups, as where it cannot (`isolation()` says which). Default true.
   */
  isolate?: boolean;
  /**
   * Folders an isolated command sees empty and read-only (turnloom's own
   * data), and files it sees empty (credentials); a folder that holds the
   * workspace is not hidden, and one moved or replaced since an earlier
   * command stops commands until it is back.
   */
  hiddenPaths?: string[];
}

const tools: Record<WorkspaceToolName, WorkspaceTool> = {
  read: readTool,
  write: writeTool,
  edit: editTool,
  list: listTool,
  glob: globTool,
  grep: grepTool,
  bash: bashTool,
};

const toolNamed = (name: string): WorkspaceTool | undefined => (Object.hasOwn(tools, name) ? tools[name as WorkspaceToolName] : undefined);

/** A failure in words the model can act on: file system codes become plain sentences about workspace paths. */
function describeFailure(error: unknown, workspace: Workspace): string {
  if (error instanceof ToolError) return error.message;
  const { code, path: file, message } = (error ?? {}) as NodeJS.ErrnoException;
  const shown = typeof file === 'string' ? workspace.show(file) : 'the path';
  switch (code) {
    case 'ENOENT':
      return `no such file: ${shown}`;
    case 'EISDIR':
      return `${shown} is a directory`;
    case 'ENOTDIR':
      return `not a directory: ${shown}`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied: ${shown}`;
    default:
      return typeof message === 'string' ? message : String(error);
  }
}

/** `work`, or its call's end as soon as `signal` aborts, even where it awaits what cannot be cancelled (an open the kernel holds). */
function endingOn<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

const duration = (ms: number): string => (ms < 1_000 ? `${ms} ms` : `${ms / 1_000} s`);

/**
 * The tools a coding agent's model calls on its workspace: read, write and
 * edit files, list, glob and grep, run bash. Every failure, a bad input
 * included, comes back as an error result the model can read and correct.
 */
export class WorkspaceTools implements ToolExecutor {
  private readonly workspace: Workspace;
  private readonly limits: Omit<ToolContext, 'workspace' | 'signal' | 'turnId' | 'ripgrep' | 'approvedDigest'>;
  /** Looked for once, when made (it never rejects). */
  private readonly ripgrep: Promise<Ripgrep | null>;
  private readonly readOnlyTimeoutMs: number;
  private readonly isolate: boolean;
  private readonly kept = new KeptCommands();

  constructor(options: WorkspaceToolsOptions) {
    this.workspace = new Workspace(options.root);
    const env = options.env ?? process.env;
    this.isolate = options.isolate ?? true;
    const hidden = new HiddenPaths(options.hiddenPaths ?? []);
    this.limits = {
      maxOutputChars: Math.max(1, options.maxOutputChars ?? 30_000),
      maxReadBytes: Math.max(1, options.maxReadBytes ?? 256 * 1024),
      bashTimeoutMs: options.bashTimeoutMs ?? 120_000,
      commandSettings: async (): Promise<CommandSettings> => {
        const cwd = this.workspace.realRoot;
        const { isolated } = await this.isolation();
        return { cwd, env: scrubbedEnv(env), isolated, hidden: isolated ? hidden.forCommandIn(cwd) : [] };
      },
      kept: this.kept,
    };
    const rg = options.ripgrep === undefined ? findRipgrep(env.PATH) : Promise.resolve(options.ripgrep);
    this.ripgrep = rg.then((found) => (found === null ? null : ripgrepFor(found, env)));
    this.readOnlyTimeoutMs = Math.max(1, options.readOnlyTimeoutMs ?? 60_000);
  }

  /**
   * Whether commands run isolated: then one cannot see the processes of
   * this one (nor their environment, with its keys) or the hidden paths, and
   * everything it starts dies with this process, `kill -9` included. When
   * not, the reason, for the one line a worker prints when it starts.
   */
  isolation(): Promise<Isolation> {
    return this.isolate ? isolationHere() : Promise.resolve({ isolated: false, reason: 'turned off' });
  }

  specs(): ToolSpec[] {
    return workspaceToolNames.map((name) => tools[name].spec);
  }

  classify(call: ToolCall): ToolClass {
    const tool = toolNamed(call.name);
    if (tool === undefined) return { kind: 'command', subject: '' };
    const prepared = tool.prepare(call.input, this.workspace);
    if (!prepared.ok) return { kind: tool.kind, subject: '' };
    return prepared.outlivesCall ? { kind: tool.kind, subject: prepared.subject, outlivesCall: true } : { kind: tool.kind, subject: prepared.subject };
  }

  validate(call: ToolCall): string | null {
    const tool = toolNamed(call.name);
    if (tool === undefined) return `no tool named ${call.name}; available: ${workspaceToolNames.join(', ')}`;
    const unparsed = unparsedArguments(call.input);
    if (unparsed !== null) return `invalid input for ${call.name}: the arguments were not valid JSON: ${unparsed}`;
    const prepared = tool.prepare(call.input, this.workspace);
    return prepared.ok ? null : `invalid input for ${call.name}: ${prepared.problems}`;
  }

  async preview(call: ToolCall): Promise<ApprovalPreview | null> {
    const tool = toolNamed(call.name);
    const prepared = tool?.prepare(call.input, this.workspace);
    // A call that cannot run fails with its own error when it is allowed; the question need not guess at it.
    if (!prepared?.ok) return null;
    return prepared.preview(this.workspace).catch((error: unknown) => ({ kind: 'unavailable' as const, reason: describeFailure(error, this.workspace) }));
  }

  /** Ends what the turn's kept commands left running, and resolves once it is gone. */
  endTurn(turnId: string): Promise<void> {
    return this.kept.endTurn(turnId);
  }

  async execute(call: ToolCall, signal: AbortSignal, turnId?: string, onOutput?: (chunk: string) => void): Promise<ToolResult> {
    const failed = (output: string): ToolResult => ({ output: capOutput(output, this.limits.maxOutputChars), isError: true });
    if (signal.aborted) return failed('interrupted');
    const tool = toolNamed(call.name);
    if (tool === undefined) return failed(`no tool named ${call.name}; available: ${workspaceToolNames.join(', ')}`);
    const unparsed = unparsedArguments(call.input);
    if (unparsed !== null) return failed(`invalid input for ${call.name}: the arguments were not valid JSON: ${unparsed}`);
    // A read has nothing to finish, so it ends at its deadline or interrupt wherever it is; edits finish what they
    // started, and bash kills everything it started on either.
    const deadline = tool.kind === 'read' ? AbortSignal.timeout(this.readOnlyTimeoutMs) : null;
    const callSignal = deadline === null ? signal : AbortSignal.any([signal, deadline]);
    try {
      const prepared = tool.prepare(call.input, this.workspace);
      if (!prepared.ok) return failed(`invalid input for ${call.name}: ${prepared.problems}`);
      const ripgrep = await this.ripgrep;
      const running = prepared.run({ ...this.limits, ripgrep, workspace: this.workspace, signal: callSignal, turnId: turnId ?? null, approvedDigest: call.approvedDigest ?? null, ...(onOutput ? { onOutput } : {}) });
      const result = await (deadline === null ? running : endingOn(running, callSignal));
      const { output, isError } = typeof result === 'string' ? { output: result, isError: false } : result;
      return { output: capOutput(output, this.limits.maxOutputChars), isError };
    } catch (error) {
      if (signal.aborted) return failed('interrupted');
      if (deadline?.aborted) return failed(`${call.name} ran out of time after ${duration(this.readOnlyTimeoutMs)}; narrow its path or pattern`);
      return failed(describeFailure(error, this.workspace));
    }
  }
}
