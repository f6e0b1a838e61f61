import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Logger, type McpServerSpec, VERSION, errorFields, isStdioServer } from '../../domain/index.ts';
import type { HiddenPaths } from '../tools/commandSandbox.ts';
import type { McpCallAnswer } from './toolContent.ts';
import { serverEnv } from './serverEnv.ts';
import { StdioTransport } from './stdioTransport.ts';

type McpTransport = StdioTransport | StreamableHTTPClientTransport | SSEClientTransport;

export type McpServerState = 'ready' | 'failed' | 'restarting';

/** One server as `McpTools.status()` reports it. */
export interface McpServerStatus {
  name: string;
  state: McpServerState;
  tools: number;
  /** Why it is failed or restarting. */
  error?: string;
  /** A stdio server's process, while it runs. */
  pid?: number;
}

/** What every connection shares: where stdio servers run and with what, how long a start may take, where to log. */
export interface ConnectionSettings {
  /** The workspace, which a spec's relative `cwd` is taken from. */
  root: string;
  /** The folder holding each stdio server's own folder (`<home>/<name>`), where one runs unless its spec names a `cwd`. */
  home: string;
  /** The environment a stdio server's is made from (`serverEnv`). */
  env: NodeJS.ProcessEnv;
  /** Whether stdio servers run isolated (`isolatedProgram`). */
  isolated: boolean;
  /** turnloom's own folders and secret files, shown empty to an isolated stdio server, as to commands. */
  hidden: HiddenPaths;
  startTimeoutMs: number;
  log: Logger;
}

/** A call's end: the server's answer, or a sentence for the model saying why there is none. */
export type CallOutcome = { answer: McpCallAnswer } | { failure: string };

/** A server that keeps dying is restarted this many times a minute at most, then left failed until the minute has passed. */
const maxRestarts = 3;
const leftStopped = `restarted ${maxRestarts} times within a minute, so it is left stopped for now`;
const restartWindowMs = 60_000;
/** How long a server whose call timed out has to answer a ping before it counts as hung and is restarted. */
const pingTimeoutMs = 5_000;
/** How long a Streamable HTTP server has to end its session on close. */
const sessionEndTimeoutMs = 2_000;
/** How long a failed call waits for a dying server's exit to be seen, to say how it ended. */
const processEndGraceMs = 500;

export const duration = (ms: number): string => (ms < 1_000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);

/** An error's message; an HTTP server's refusal with its status, which says more than its body (401: a key is missing). */
function message(error: unknown): string {
  if (error instanceof StreamableHTTPError && typeof error.code === 'number') return `HTTP ${error.code}, ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * A stdio server's own folder, outside the workspace: a launcher run there
 * (`npx`, `uvx`) finds no program of the repository's. Its `package.json`
 * (`{}`) ends npm's search for a project there, so `npx` runs the package
 * it was asked for, never a `node_modules/.bin` of a folder above.
 */
function serverFolder(home: string, name: string): string {
  const folder = path.join(home, name);
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(folder, 'package.json'), '{}\n');
  return folder;
}

/** `work`, or a rejection once `ms` pass: a bound on what takes no timeout of its own. */
function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${duration(ms)}`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** `work`, or `null` as soon as `signal` aborts. */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const abort = () => resolve(null);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/**
 * One MCP server and the SDK client talking to it: started (a process) or
 * reached (a URL), asked for its tools, called, and restarted when it dies or
 * hangs. It never throws at its callers: a failure is a state and a sentence.
 */
export class McpServerConnection {
  readonly name: string;
  private state: McpServerState = 'failed';
  private error: string | undefined;
  private tools: Tool[] = [];
  /** Bumped whenever `tools` is replaced, so the executor knows to rebuild its catalog. */
  private toolsVersion = 0;
  private client: Client | null = null;
  private transport: McpTransport | null = null;
  /** A restart (or a hang check that may lead to one) under way: calls wait for it. */
  private pending: Promise<void> | null = null;
  private restartTimes: number[] = [];
  /** It was ready once: a server that never started is left out, not restarted. */
  private started = false;
  private closed = false;

  constructor(
    readonly spec: McpServerSpec,
    private readonly settings: ConnectionSettings,
    /** Why the spec cannot be used (a bad or repeated name), found before any start. */
    private readonly refusal: string | null = null,
  ) {
    this.name = spec.name;
  }

  /** Connects and lists the tools; a failure is logged and left in `status()`. */
  async start(): Promise<void> {
    if (this.refusal !== null) {
      this.fail(this.refusal);
      return;
    }
    try {
      await this.open();
      this.started = true;
      this.state = 'ready';
      this.settings.log.info({ server: this.name, tools: this.tools.length }, 'MCP server started');
    } catch (error) {
      this.fail(`could not start: ${message(error)}`);
    }
  }

  status(): McpServerStatus {
    const pid = this.transport instanceof StdioTransport ? this.transport.pid : null;
    return { name: this.name, state: this.state, tools: this.tools.length, ...(this.error !== undefined ? { error: this.error } : {}), ...(pid !== null ? { pid } : {}) };
  }

  /** The tools it offers, as last listed, and a version that changes when they do. */
  listed(): { tools: readonly Tool[]; version: number } {
    return { tools: this.tools, version: this.toolsVersion };
  }

  /** Calls `tool`; waits for a restart under way first, and starts one when this call finds the server dead or hung. */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallOutcome> {
    if (this.pending && (await unlessAborted(this.pending.then(() => true), signal)) === null) return { failure: 'interrupted' };
    if (this.state === 'failed' && this.started && !this.closed && this.mayRestart()) {
      if ((await unlessAborted(this.restart(this.error ?? 'it had stopped').then(() => true), signal)) === null) return { failure: 'interrupted' };
    }
    if (this.closed) return { failure: `MCP server "${this.name}" was closed` };
    const { client, transport } = this;
    if (this.state !== 'ready' || client === null) return { failure: `MCP server "${this.name}" is not running: ${this.error ?? 'it has stopped'}` };
    if (signal.aborted) return { failure: 'interrupted' };
    // A signal of the call's own: the SDK never lets go of the one it is given, and would cancel a request long answered when a later turn aborts it.
    const call = new AbortController();
    const abort = () => call.abort(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    try {
      const answer = await client.callTool({ name: tool, arguments: args }, undefined, { signal: call.signal, timeout: timeoutMs });
      return { answer };
    } catch (error) {
      if (signal.aborted) return { failure: 'interrupted' };
      // A write to a server that just died fails before its exit is seen: the exit says why better than the broken pipe.
      const mayHaveDied = !(error instanceof McpError) || error.code === ErrorCode.ConnectionClosed;
      if (mayHaveDied && transport instanceof StdioTransport) await transport.endWithin(processEndGraceMs);
      return { failure: this.failedCall(client, transport, tool, error, timeoutMs) };
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  /** Stops the server (or ends the session) and forgets its client; calls after it fail. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pending?.catch(() => undefined);
    await this.dispose();
  }

  /** The sentence for a call that got no answer, and a restart when the server is gone or may be hung. */
  private failedCall(client: Client, transport: McpTransport | null, tool: string, error: unknown, timeoutMs: number): string {
    if (this.closed) return `MCP server "${this.name}" was closed`;
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      this.checkAlive(client, tool);
      return `MCP server "${this.name}" did not answer "${tool}" within ${duration(timeoutMs)}`;
    }
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
      // The server answered, with an error of the protocol's (an unknown tool, arguments it refused): it is alive.
      return `MCP server "${this.name}" refused "${tool}": ${error.message}`;
    }
    const reason = this.stopReason(transport, error);
    // Said before restarting: a server past its restarts is left stopped, and the sentence must not promise otherwise.
    const restarting = this.client !== client || this.mayRestart();
    void this.restartIf(client, reason);
    return restarting ? `MCP server "${this.name}" ${reason}; it is being restarted` : `MCP server "${this.name}" ${reason}; ${leftStopped}`;
  }

  /** A call timed out: a server that still answers a ping is only slow; one that does not is hung, and restarted. */
  private checkAlive(client: Client, tool: string): void {
    if (this.pending || this.client !== client) return;
    const check = client.ping({ timeout: pingTimeoutMs }).then(
      () => undefined,
      () => this.restartIf(client, `did not answer "${tool}", nor a ping after it`),
    );
    this.pending = check.finally(() => {
      if (this.pending === tracked) this.pending = null;
    });
    const tracked = this.pending;
  }

  /** Restarts the server unless `client` is no longer its client (another call restarted it already). */
  private restartIf(client: Client, reason: string): Promise<void> {
    if (this.client !== client || this.closed) return this.pending ?? Promise.resolve();
    return this.restart(reason);
  }

  private mayRestart(): boolean {
    const now = Date.now();
    this.restartTimes = this.restartTimes.filter((time) => now - time < restartWindowMs);
    return this.restartTimes.length < maxRestarts;
  }

  /** Closes the client and connects anew, at most `maxRestarts` times a minute; after that, failed with the reason until the minute has passed. */
  private restart(reason: string): Promise<void> {
    if (this.pending && this.state === 'restarting') return this.pending;
    if (!this.mayRestart()) {
      this.fail(`${reason}; ${leftStopped}`);
      const failed = this.dispose();
      this.pending = null;
      return failed;
    }
    this.restartTimes.push(Date.now());
    this.state = 'restarting';
    this.error = reason;
    this.settings.log.warn({ server: this.name, reason }, 'MCP server stopped; restarting it');
    const restarting = (async () => {
      await this.dispose();
      if (this.closed) return;
      try {
        await this.open();
        this.state = 'ready';
        this.error = undefined;
        this.settings.log.info({ server: this.name, tools: this.tools.length }, 'MCP server restarted');
      } catch (error) {
        this.fail(`${reason}; restarting it failed: ${message(error)}`);
      }
    })();
    this.pending = restarting.finally(() => {
      if (this.pending === tracked) this.pending = null;
    });
    const tracked = this.pending;
    return tracked;
  }

  private fail(reason: string): void {
    this.state = 'failed';
    this.error = reason;
    this.settings.log.warn({ server: this.name, reason }, 'MCP server failed');
  }

  /** Why the server is gone, in words: a process's exit code and last stderr line, or the error that ended the connection. */
  private stopReason(transport: McpTransport | null, error: unknown): string {
    if (transport instanceof StdioTransport) {
      const end = transport.end;
      const stderr = transport.lastStderrLine();
      const how = end === null ? message(error) : end.signal !== null ? `killed by ${end.signal}` : `exit code ${end.code}`;
      return `stopped (${how}${stderr !== null ? `, last stderr line: ${stderr}` : ''})`;
    }
    return `could not be reached (${message(error)})`;
  }

  /** Starts or reaches the server, initializes the session and lists every page of its tools. */
  private async open(): Promise<void> {
    const { spec, settings } = this;
    const transport = isStdioServer(spec)
      ? new StdioTransport({
          command: spec.command,
          args: spec.args ?? [],
          env: serverEnv(settings.env, spec.env),
          cwd: spec.cwd === undefined ? serverFolder(settings.home, spec.name) : path.resolve(settings.root, spec.cwd),
          isolated: settings.isolated,
          hidden: settings.hidden,
        })
      : spec.transport === 'sse'
        ? new SSEClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } })
        : new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: spec.headers ?? {} } });
    const client = new Client({ name: 'turnloom', version: VERSION }, { capabilities: {} });
    client.onerror = (error) => settings.log.debug({ server: this.name, ...errorFields(error) }, 'MCP transport error');
    this.client = client;
    this.transport = transport;
    try {
      await client.connect(transport, { timeout: settings.startTimeoutMs });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: settings.startTimeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      this.tools = tools;
      this.toolsVersion += 1;
    } catch (error) {
      const reason = this.startFailure(transport, error);
      await this.dispose();
      throw new Error(reason);
    }
    // Set after connecting: the SDK calls it for our own close too, which is no death.
    client.onclose = () => {
      if (this.client === client && !this.closed) void this.restart(this.stopReason(transport, new Error('the connection closed')));
    };
  }

  private startFailure(transport: McpTransport, error: unknown): string {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (isStdioServer(this.spec) && code === 'ENOENT') return `no such command: ${this.spec.command}`;
    if (isStdioServer(this.spec) && code === 'EACCES') return `not allowed to run: ${this.spec.command}`;
    if (transport instanceof StdioTransport && transport.end !== null) return this.stopReason(transport, error);
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return `it did not answer within ${duration(this.settings.startTimeoutMs)}`;
    return message(error);
  }

  /** Closes the current client and its transport, if any: the process exits (or is killed), the HTTP session is ended. */
  private async dispose(): Promise<void> {
    const { client, transport } = this;
    this.client = null;
    this.transport = null;
    if (transport instanceof StreamableHTTPClientTransport) {
      await within(transport.terminateSession(), sessionEndTimeoutMs, 'ending the session').catch(() => undefined);
    }
    try {
      if (client) await client.close();
      else await transport?.close();
    } catch (error) {
      this.settings.log.debug({ server: this.name, ...errorFields(error) }, 'closing an MCP client failed');
    }
  }
}
