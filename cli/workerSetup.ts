import { dirname, join } from 'node:path';
import { combineTools } from '../adapters/tools/index.ts';
import { type AgentProfile, type Logger, type McpServerSpec, type ProviderChoice, builtinAgents, silentLogger } from '../domain/index.ts';
import { type TurnloomConfig, userConfigPath } from '../services/config/index.ts';
import type { WorkerOptions } from '../services/worker/index.ts';
import { UsageError } from './cliErrors.ts';
import { mcpServersHome } from './dataHome.ts';
import type { WorkspaceSetup } from './workspaceSetup.ts';

/** What the configuration adds to a worker: its agents, its MCP tools beside the workspace's, the user's instructions file. */
export interface ConfiguredWorker {
  options: Required<Pick<WorkerOptions, 'tools' | 'agents' | 'userInstructions'>> & Pick<WorkerOptions, 'defaultAgent'>;
  /** One line for the console per MCP server: its tools, or why it has none. */
  notes: string[];
  /** Stops the MCP servers it started. */
  close(): Promise<void>;
}

/** The agents a configuration defines, over the built-in ones (a field it leaves out keeps the built-in one's). */
export function configuredAgents(config: TurnloomConfig): Record<string, AgentProfile> {
  const agents: Record<string, AgentProfile> = { ...builtinAgents };
  for (const [name, agent] of Object.entries(config.agents ?? {})) {
    const base = agents[name] ?? { description: '', instructions: '' };
    agents[name] = Object.fromEntries(Object.entries({ ...base, ...agent }).filter(([, value]) => value !== undefined)) as unknown as AgentProfile;
  }
  return agents;
}

/** `agent` when the configuration knows it; else one line saying which it knows. */
export function checkAgent(command: string, config: TurnloomConfig, agent: string): string {
  const known = Object.keys(configuredAgents(config));
  if (!known.includes(agent)) throw new UsageError(`${command}: no agent "${agent}"; the agents are ${known.join(', ')} (define more under "agents" in the configuration: docs/agents.md)`);
  return agent;
}

/** What an agent runs on: its provider and model where it names them, else the default's; a provider not configured here is one line. */
export function agentProvider(config: TurnloomConfig, agent: string, setup: { providers: Record<string, unknown>; defaultProvider: ProviderChoice }): ProviderChoice {
  const profile = configuredAgents(config)[agent]!;
  const name = profile.provider ?? setup.defaultProvider.name;
  if (!Object.hasOwn(setup.providers, name)) throw new UsageError(`run: agent "${agent}" runs on provider "${name}", which is not configured here (configured: ${Object.keys(setup.providers).join(', ')})`);
  return { name, model: profile.model ?? (name === setup.defaultProvider.name ? setup.defaultProvider.model : null) };
}

function serverSpecs(config: TurnloomConfig): McpServerSpec[] {
  return Object.entries(config.mcp ?? {})
    .filter(([, server]) => server.enabled !== false)
    .map(([name, server]) => {
      const { enabled: _enabled, ...spec } = server;
      return { name, ...spec } as McpServerSpec;
    });
}

/** Starts what the configuration asks of a worker on `workspace` (with `tools`, the workspace's own). */
export async function configuredWorker(config: TurnloomConfig, setup: Pick<WorkspaceSetup, 'workspace' | 'tools' | 'hidden'>, log: Logger = silentLogger): Promise<ConfiguredWorker> {
  const { workspace, tools, hidden } = setup;
  const servers = serverSpecs(config);
  // The MCP SDK is loaded only when there are servers: every command would pay for it otherwise.
  const mcp = servers.length > 0 ? await (await import('../adapters/mcp/index.ts')).McpTools.start({ servers, root: workspace, home: mcpServersHome(), hidden, log }) : null;
  const notes = (mcp?.status() ?? []).map((server) => (server.state === 'ready' ? `  mcp ${server.name}: ${server.tools} tools` : `  mcp ${server.name}: not started: ${server.error ?? server.state}`));
  return {
    options: {
      tools: mcp ? combineTools(tools, mcp) : tools,
      agents: configuredAgents(config),
      userInstructions: join(dirname(userConfigPath()), 'AGENTS.md'),
      ...(config.agent ? { defaultAgent: config.agent } : {}),
    },
    notes,
    close: async () => {
      await mcp?.close();
    },
  };
}
