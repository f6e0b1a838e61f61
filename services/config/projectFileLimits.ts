import type { PermissionMode, PermissionRule } from '../../domain/index.ts';
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
 * rule, and an agent's mode only as narrow as it would be without the
 * project file. Nor may it point a provider at another server or another
 * key variable: the user's key would be sent where the file says; nor
 * add an MCP server, which is a program to start or a URL to send to.
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
    if (agent.mode === undefined) continue;
    const base = user.agents?.[name]?.mode ?? user.permissions?.mode ?? 'ask';
    if (breadth[agent.mode] > breadth[base]) {
      return { path: `agents.${name}.mode`, message: `the project file may only narrow a mode, and "${agent.mode}" lets the agent do more than "${base}"; ${elsewhere}` };
    }
  }
  // A server is a program this process starts, or a URL it sends `${VAR}` values to: the model must not be able to add one.
  const server = Object.keys(project.mcp ?? {})[0];
  if (server !== undefined) {
    return { path: `mcp.${server}`, message: 'the project file may not add MCP servers (a server is a program turnloom starts, or a URL it sends your variables to, and the model can edit this file); put it in the user file' };
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
