import { type PermissionMode, type PermissionRule, builtinAgents, wildcardMatches } from '../../domain/index.ts';
import type { TurnloomConfig } from './configSchema.ts';

/** Modes from the one that lets the agent do least to the one that lets it do most. */
const breadth: Record<PermissionMode, number> = { 'read-only': 0, ask: 1, 'auto-edits': 2, full: 3 };

export interface Refusal {
  path: string;
  message: string;
}

const elsewhere = 'put it in the user file, or pass it on the command line';

/**
 * What the project file may not say. It sits in the repository the model
 * edits (and in every repository one clones), so whatever it says could
 * have been written by the model or by a stranger: it may make the agent
 * ask or refuse more, never less. So no `permissions.mode`, no `allow`
 * rule, and an agent's mode and tools only as narrow as they would be
 * without the project file: a built-in agent's own (plan is read-only with
 * four tools) unless the user file widened them, so a wide user mode never
 * lets the project widen plan. Nor may it point a provider at another server or another
 * key variable: the user's key would be sent where the file says; nor
 * allow an MCP server (the servers it names are only offered, see `loadConfig`).
 * Returns the first thing refused, or `null`.
 */
export function projectFileRefusal(project: TurnloomConfig, user: TurnloomConfig): Refusal | null {
  if (project.permissions?.mode !== undefined) {
    return { path: 'permissions.mode', message: `the project file may not set the permission mode (the model can edit it); ${elsewhere}` };
  }
  const allowAt = (rules: readonly PermissionRule[] | undefined) => rules?.findIndex((rule) => rule.decision === 'allow') ?? -1;
  const ruleIndex = allowAt(project.permissions?.rules);
  if (ruleIndex >= 0) {
    return { path: `permissions.rules.${ruleIndex}`, message: `the project file may add only "ask" and "deny" rules, not "allow" (the model can edit it); ${elsewhere}` };
  }
  for (const [name, agent] of Object.entries(project.agents ?? {})) {
    const index = allowAt(agent.rules);
    if (index >= 0) return { path: `agents.${name}.rules.${index}`, message: `the project file may add only "ask" and "deny" rules, not "allow" (the model can edit it); ${elsewhere}` };
    const builtin = Object.hasOwn(builtinAgents, name) ? builtinAgents[name] : undefined;
    if (agent.mode !== undefined) {
      const base = user.agents?.[name]?.mode ?? builtin?.mode ?? user.permissions?.mode ?? 'ask';
      if (breadth[agent.mode] > breadth[base]) {
        return { path: `agents.${name}.mode`, message: `the project file may only narrow a mode, and "${agent.mode}" lets the agent do more than "${base}"; ${elsewhere}` };
      }
    }
    const offered = user.agents?.[name]?.tools ?? builtin?.tools;
    if (agent.tools === undefined || offered === undefined) continue;
    // A pattern of the project's is kept only if the list already has it: "read*" under "read" would offer more than the list says.
    const toolIndex = agent.tools.findIndex((tool) => !offered.includes(tool) && (tool.includes('*') || !offered.some((pattern) => wildcardMatches(pattern, tool))));
    if (toolIndex >= 0) {
      return {
        path: `agents.${name}.tools.${toolIndex}`,
        message: `the project file may only narrow an agent's tools, and "${agent.tools[toolIndex]}" is not among ${offered.join(', ')}; ${elsewhere}`,
      };
    }
  }
  // Its MCP servers are only offered (`LoadedConfig.offered`); what the person allowed is theirs to say.
  if (project.mcpAllowed !== undefined) {
    return { path: 'mcpAllowed', message: 'the project file may not allow MCP servers (the model can edit it); allow one with: turnloom mcp allow NAME' };
  }
  for (const [name, provider] of Object.entries(project.providers ?? {})) {
    for (const key of ['baseUrl', 'apiKeyEnv'] as const) {
      if (provider[key] !== undefined) {
        return { path: `providers.${name}.${key}`, message: `the project file may not set a provider's ${key} (the API key would go where the file says); put it in the user file` };
      }
    }
  }
  return null;
}
