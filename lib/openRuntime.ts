import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { ScriptedProvider } from '../adapters/providers/scriptedProvider.ts';
import { InProcessHub } from '../bus/index.ts';
import { TurnloomClient } from '../client/turnloomClient.ts';
import type { McpTools } from '../adapters/mcp/index.ts';
import type { FunctionTool } from '../adapters/tools/index.ts';
import type { AgentProfile, Logger, McpServerSpec, ProviderAdapter, ProviderChoice, ToolExecutor } from '../domain/index.ts';
import { type TurnloomServer, startTurnloomServer } from '../services/turnloomServer.ts';
import type { TurnHooks } from '../services/worker/turnHooks.ts';
import { openWorkspace } from '../services/worker/openWorkspace.ts';

export interface RuntimeOptions {
  /** Where threads are kept (an LMDB folder, made when missing). Left out: a temporary folder, removed by `close()`. */
  data?: string;
  /** The folder the agent works in: its tools, and its checkpoints when it is a git repository. Left out: no workspace (a tool call fails, saying so). */
  workspace?: string;
  /** Providers by name (default: `{ scripted }`, which answers without a key). */
  providers?: Record<string, ProviderAdapter>;
  /** The provider a turn runs on when it names none (default: the first of `providers`). */
  defaultProvider?: ProviderChoice;
  /** Tools of the program's own (`tool()`), offered beside the workspace's and MCP servers'; a name that clashes with another is a `TypeError` here. */
  tools?: FunctionTool[];
  /** Extension hooks of the local worker (see `turnloom/worker`). */
  hooks?: TurnHooks;
  /** Agents besides the built-in `build` and `plan` (see docs/agents.md), and the one turns run as when they name none. */
  agents?: Record<string, AgentProfile>;
  defaultAgent?: string;
  /** MCP tool servers whose tools the agent is offered beside the workspace's (see docs/mcp.md); started here, stopped by `close()`. */
  mcpServers?: McpServerSpec[];
  /** An approval nobody answers expires after this long (default: never). */
  approvalTimeoutMs?: number;
  /** Where the runtime says what happens; default: nowhere. */
  log?: Logger;
}

/** An engine, its API and a worker in this process, and a client of them. */
export interface Runtime {
  /** A client of the runtime's API: `startTurn`, `answerApproval`, `interrupt`, and every API method through `call`. */
  client: TurnloomClient;
  /** The engine's server, for what the client does not reach (its engine, its worker). */
  server: TurnloomServer;
  /** Where its threads are kept. */
  data: string;
  /** Stops the worker (settling its turns), the API and the engine, closes the store, and removes a temporary data folder. */
  close(): Promise<void>;
}

/**
 * Opens everything one process needs to run turns: an LMDB store, the
 * in-process bus, the engine with its API, and a worker with the
 * workspace's tools, all closed again by `close()`.
 */
export async function openRuntime(options: RuntimeOptions = {}): Promise<Runtime> {
  const temporary = options.data === undefined ? mkdtempSync(join(tmpdir(), 'turnloom-runtime-')) : null;
  const data = options.data ?? temporary!;
  const removeTemporary = () => {
    if (temporary) rmSync(temporary, { recursive: true, force: true });
  };
  const providers = options.providers ?? { scripted: new ScriptedProvider() };
  const first = Object.keys(providers)[0];
  if (first === undefined) throw new TypeError('openRuntime: `providers` names no provider');
  let store: LmdbStore;
  let mcp: McpTools | null = null;
  try {
    store = LmdbStore.open(data);
  } catch (error) {
    removeTemporary();
    throw error;
  }
  try {
    const workspace = options.workspace === undefined ? null : await openWorkspace(options.workspace, { exclude: [data], hide: [data] });
    mcp = workspace && options.mcpServers?.length ? await (await import('../adapters/mcp/index.ts')).McpTools.start({ servers: options.mcpServers, root: workspace.root, hidden: [data], ...(options.log ? { log: options.log } : {}) }) : null;
    const executors: ToolExecutor[] = workspace ? [workspace.tools, ...(mcp ? [mcp] : [])] : [];
    const tools = [...executors, ...(options.tools ?? [])];
    const agents = { ...(options.agents ? { agents: options.agents } : {}), ...(options.defaultAgent ? { defaultAgent: options.defaultAgent } : {}) };
    const bus = new InProcessHub(options.log).connect();
    const server = await startTurnloomServer({
      bus,
      store,
      providers,
      defaultProvider: options.defaultProvider ?? { name: first, model: null },
      localWorker: {
        ...(workspace ? { workspace: workspace.root, checkpoints: workspace.checkpoints } : {}),
        ...(tools.length > 0 ? { tools } : {}),
        ...(options.hooks ? { hooks: options.hooks } : {}),
        ...agents,
      },
      ...(options.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: options.approvalTimeoutMs }),
      ...(options.log ? { log: options.log } : {}),
    });
    const client = new TurnloomClient(bus);
    return {
      client,
      server,
      data,
      close: async () => {
        await server.stop();
        await mcp?.close();
        await bus.close();
        removeTemporary();
      },
    };
  } catch (error) {
    await mcp?.close();
    await store.close().catch(() => undefined);
    removeTemporary();
    throw error;
  }
}
