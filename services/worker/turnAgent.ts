import { type AgentProfile, type PermissionMode, type Permissions, type ToolSpec, TurnloomError, agentMode, agentOffers } from '../../domain/index.ts';
import type { TurnWork } from './turnWork.ts';

/** The agent a turn asks for: its own, else its thread's, else the worker's default. */
export function askedAgent(work: TurnWork): string {
  const view = work.fold.context.view!;
  return view.turns[work.turnId]!.agent ?? view.agent ?? work.defaultAgent;
}

/** The profile of a name this worker knows; a name it does not know fails the turn, saying which it knows. */
export function agentNamed(work: TurnWork, name: string): AgentProfile {
  const profile = Object.hasOwn(work.agents, name) ? work.agents[name] : undefined;
  if (!profile) throw new TurnloomError('invalid_payload', `no agent "${name}" on this worker; it knows ${Object.keys(work.agents).join(', ')} (define more under "agents" in its configuration)`, { agent: name });
  return profile;
}

/** The agent the turn runs as: the one its recorded context names. */
export function turnAgent(work: TurnWork): { name: string; profile: AgentProfile } {
  const context = work.fold.context.view!.turnContext;
  const name = context?.turnId === work.turnId ? context.context.agent : askedAgent(work);
  return { name, profile: agentNamed(work, name) };
}

/** The tools the agent is offered, of those this turn could run. */
export const agentTools = (profile: AgentProfile, specs: readonly ToolSpec[]): ToolSpec[] => specs.filter((spec) => agentOffers(profile, spec.name));

/** What the turn's calls are decided by: the turn's (or thread's) mode narrowed to the agent's, and the agent's rules with the thread's. */
export function agentPermissions(work: TurnWork, profile: AgentProfile): { mode: PermissionMode; permissions: Permissions } {
  const view = work.fold.context.view!;
  const mode = agentMode(view.turns[work.turnId]!.mode ?? view.permissions.mode, profile);
  return { mode, permissions: { mode, rules: [...(profile.rules ?? []), ...view.permissions.rules] } };
}
