import { type Logger, type McpServerSpec, type ToolCall, type ToolClass, type ToolExecutor, type ToolResult, type ToolSpec, isStdioServer, mcpServerNamePattern, silentLogger } from '../../domain/index.ts';
import { capOutput, headOf } from '../tools/capOutput.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HiddenPaths, isolationHere } from '../tools/commandSandbox.ts';
import { unparsedArguments } from '../tools/unparsedArguments.ts';
import { McpServerConnection, type McpServerStatus } from './mcpServerConnection.ts';
import { answerText } from './toolContent.ts';
import { offeredToolName } from './toolNames.ts';

export interface McpToolsOptions {
  servers: McpServerSpec[];
  /** The workspace: a spec's `cwd` is taken relative to it. */
  root: string;
  /**
   * The folder in which each stdio server gets a folder of its own
   * (`<home>/<name>`) to run in, unless its spec gives a `cwd`. Default: a
   * new temporary folder, removed on close.
   */
  home?: string;
  /** Where stdio servers' basic variables (PATH, HOME, the locale…) come from; a spec's own `env` is added to them. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Run stdio servers isolated as bash commands are, where this machine allows it. Default true. */
  isolate?: boolean;
  /** Folders and files an isolated stdio server sees empty, as commands do (turnloom's data, secret files); none that holds its own folder. */
  hidden?: readonly string[];
  /** Longer output keeps its start and end, with a note on what was cut. Default 30 000. */
  maxOutputChars?: number;
  /** How long a call may take when its server's spec sets no `timeoutMs`. Default 1 minute. */
  callTimeoutMs?: number;
  /** How long a server has to start (or answer, for a URL) and list its tools. Default 30 s. */
  startTimeoutMs?: number;
  log?: Logger;
}

/** A server's description may be long (a manual); the model gets its start. */
const maxDescriptionChars = 2_000;

/** One tool as offered to the model, and where its calls go. */
interface OfferedTool {
  spec: ToolSpec;
  server: McpServerConnection;
  tool: string;
}

/** The call's input as MCP arguments (an object), or why it is none. */
function callArguments(name: string, input: unknown): { args: Record<string, unknown> } | { invalid: string } {
  const unparsed = unparsedArguments(input);
  if (unparsed !== null) return { invalid: `invalid input for ${name}: the arguments were not valid JSON: ${unparsed}` };
  if (input === undefined || input === null) return { args: {} };
  if (typeof input !== 'object' || Array.isArray(input)) return { invalid: `invalid input for ${name}: expected an object of arguments` };
  return { args: input as Record<string, unknown> };
}

function describe(description: string | undefined, fallback: string): string {
  const text = description?.trim() || fallback;
  return text.length <= maxDescriptionChars ? text : `${headOf(text, maxDescriptionChars - 1)}…`;
}

/** Why a spec cannot be used before anything is started: its name. */
function refusalOf(spec: McpServerSpec, earlier: Set<string>): string | null {
  if (typeof spec.name !== 'string' || !mcpServerNamePattern.test(spec.name)) return 'its name must be 1 to 32 letters, digits, "_" or "-"';
  if (earlier.has(spec.name)) return 'another MCP server has this name';
  earlier.add(spec.name);
  return null;
}

/**
 * The tools of MCP servers (started as processes over stdio, or reached over
 * Streamable HTTP), offered to the model as `<server>__<tool>`.
 *
 * What an MCP tool does is the server's to say, and nothing here can check
 * it, so every call classifies as a `command` whose subject is its offered
 * name: it asks for approval in `ask` and `auto-edits` unless a permission
 * rule allows it (`{ tool: 'everything__echo', pattern: '*', decision: 'allow' }`),
 * is denied in `read-only`, and runs in `full`.
 *
 * A stdio server gets a few basic variables (PATH, HOME, the locale; see
 * `serverEnv`) plus exactly its spec's own `env`, so a key reaches a server
 * only when its spec names it; it runs in a folder of its own, not the
 * workspace, and isolated as bash commands are (its /proc shows none of
 * this process's), where the machine allows it. A server that fails to start is left out (its
 * tools absent, `status()` saying why); one that dies or hangs is restarted,
 * at most 3 times a minute. Every failure is a result the model can read.
 */
export class McpTools implements ToolExecutor {
  private readonly maxOutputChars: number;
  private readonly callTimeoutMs: number;
  private catalog = new Map<string, OfferedTool>();
  private catalogKey = '';
  private readonly reported = new Set<string>();

  private constructor(
    private readonly servers: McpServerConnection[],
    options: McpToolsOptions,
    private readonly log: Logger,
    /** The servers' home when it was made for them, removed on close. */
    private readonly temporary: string | null,
  ) {
    this.maxOutputChars = Math.max(1, options.maxOutputChars ?? 30_000);
    this.callTimeoutMs = Math.max(1, options.callTimeoutMs ?? 60_000);
  }

  /** Starts (or reaches) every server at once; never throws for a server that fails, which `status()` then reports. */
  static async start(options: McpToolsOptions): Promise<McpTools> {
    const log = options.log ?? silentLogger;
    const stdio = options.servers.some(isStdioServer);
    const isolation = stdio && options.isolate !== false ? await isolationHere() : { isolated: false as const, reason: 'turned off' };
    if (stdio && !isolation.isolated && options.isolate !== false) {
      log.warn({ reason: isolation.reason }, 'MCP servers run without isolation: a server can read the environment of this process through /proc');
    }
    const temporary = options.home === undefined ? mkdtempSync(path.join(tmpdir(), 'turnloom-mcp-')) : null;
    const home = options.home ?? temporary!;
    const settings = { root: options.root, home, env: options.env ?? process.env, isolated: isolation.isolated, hidden: new HiddenPaths(options.hidden ?? []), startTimeoutMs: Math.max(1, options.startTimeoutMs ?? 30_000), log };
    const names = new Set<string>();
    const servers = options.servers.map((spec) => new McpServerConnection(spec, settings, refusalOf(spec, names)));
    await Promise.all(servers.map((server) => server.start()));
    return new McpTools(servers, options, log, temporary);
  }

  specs(): ToolSpec[] {
    return [...this.offered().values()].map((offered) => offered.spec);
  }

  handles(call: ToolCall): boolean {
    return this.offered().has(call.name);
  }

  classify(call: ToolCall): ToolClass {
    return { kind: 'command', subject: call.name };
  }

  /** The name and the arguments' shape are checked here; the server checks its own schema when the call runs. */
  validate(call: ToolCall): string | null {
    if (!this.offered().has(call.name)) return `no tool named ${call.name}; available: ${[...this.offered().keys()].join(', ') || 'none'}`;
    const input = callArguments(call.name, call.input);
    return 'invalid' in input ? input.invalid : null;
  }

  async execute(call: ToolCall, signal: AbortSignal, _turnId?: string): Promise<ToolResult> {
    if (signal.aborted) return { output: 'interrupted', isError: true };
    const offered = this.offered().get(call.name);
    if (offered === undefined) return { output: `no tool named ${call.name}; available: ${[...this.offered().keys()].join(', ') || 'none'}`, isError: true };
    const input = callArguments(call.name, call.input);
    if ('invalid' in input) return { output: input.invalid, isError: true };
    try {
      const timeoutMs = offered.server.spec.timeoutMs ?? this.callTimeoutMs;
      const outcome = await offered.server.call(offered.tool, input.args, signal, Math.max(1, timeoutMs));
      if ('failure' in outcome) return { output: outcome.failure, isError: true };
      const isError = outcome.answer.isError === true;
      const output = answerText(outcome.answer);
      return { output: capOutput(isError && output === '' ? `MCP tool "${call.name}" failed without saying why` : output, this.maxOutputChars), isError };
    } catch (error) {
      // The connection turns every failure it knows into words; this is for the ones nobody foresaw.
      return { output: `MCP tool "${call.name}" failed: ${error instanceof Error ? error.message : String(error)}`, isError: true };
    }
  }

  /** Nothing of a call outlives it here: a server's processes belong to the worker, not to a turn. */
  async endTurn(_turnId: string): Promise<void> {}

  status(): McpServerStatus[] {
    return this.servers.map((server) => server.status());
  }

  /** Closes every client: stdio servers exit (or are killed), HTTP sessions end. */
  async close(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.close()));
    if (this.temporary !== null) rmSync(this.temporary, { recursive: true, force: true });
  }

  /** The offered tools by name, rebuilt when a server's tools change (a restart may list others). */
  private offered(): Map<string, OfferedTool> {
    const listed = this.servers.map((server) => server.listed());
    const key = listed.map((entry) => entry.version).join(',');
    if (key === this.catalogKey) return this.catalog;
    const catalog = new Map<string, OfferedTool>();
    this.servers.forEach((server, index) => {
      for (const tool of listed[index]!.tools) {
        const name = offeredToolName(server.name, tool.name);
        if (catalog.has(name)) {
          // Two tools whose names differ only in characters providers refuse, or past the 64th: the first keeps the name.
          if (!this.reported.has(name)) this.log.warn({ server: server.name, tool: tool.name, offeredAs: name }, 'MCP tool left out: its name is taken');
          this.reported.add(name);
          continue;
        }
        const { $schema: _, ...inputSchema } = tool.inputSchema as Record<string, unknown>;
        catalog.set(name, { spec: { name, description: describe(tool.description, tool.title ?? `${tool.name}, from MCP server ${server.name}`), inputSchema }, server, tool: tool.name });
      }
    });
    this.catalog = catalog;
    this.catalogKey = key;
    return catalog;
  }
}
