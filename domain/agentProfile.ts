import { type PermissionMode, type PermissionRule, stricterMode, wildcardMatches } from './permissions.ts';

/**
 * A named way of working: what the model is told, which tools it is
 * offered, and how much it may do. A thread or a turn names one; `build`
 * is the default.
 */
export interface AgentProfile {
  description: string;
  /** Added to the system prompt after the common part. */
  instructions: string;
  /** The most this agent may do: the turn runs under the stricter of this and the thread's (or turn's) mode, so an agent never widens it. */
  mode?: PermissionMode;
  /** Rules of its own, checked before the thread's. */
  rules?: PermissionRule[];
  /** The tools offered, by name or `*` pattern (`everything__*`); left out, all of them. A call to any other is refused. */
  tools?: string[];
  /** A provider and model of its own, for turns that name none. */
  provider?: string;
  model?: string;
}

export const DEFAULT_AGENT = 'build';

export const builtinAgents: Readonly<Record<string, AgentProfile>> = {
  build: {
    description: 'Does the work: reads, edits files and runs commands, as the permission mode allows.',
    instructions: '',
  },
  plan: {
    description: 'Reads and proposes a plan; changes nothing and runs no commands.',
    instructions: [
      'You are in plan mode: read the code and propose a plan, step by step, with the files and changes it needs.',
      'Do not edit or create files and do not run commands; you have no tools for that, and the mode is read-only.',
      'End with the plan and the questions the user should answer before it is carried out.',
    ].join(' '),
    mode: 'read-only',
    tools: ['read', 'list', 'glob', 'grep'],
  },
  explore: {
    description: 'Finds things out: reads and searches the code and reports what it found; changes nothing.',
    instructions: [
      'You are an explore agent: read and search the code to answer the question you were given.',
      'Do not edit or create files and do not run commands. End with a short, precise report of what you found, with file paths.',
    ].join(' '),
    mode: 'read-only',
    tools: ['read', 'list', 'glob', 'grep'],
  },
  general: {
    description: 'Does a piece of work handed to it: reads, edits files and runs commands, as the permission mode allows.',
    instructions: 'You are doing a piece of work handed to you by another agent. Do it, then end with a short report of what you did and what you found.',
  },
};

/** The mode a turn runs under: the thread's (or the turn's own), narrowed to the agent's. */
export function agentMode(mode: PermissionMode, agent: AgentProfile): PermissionMode {
  return agent.mode === undefined ? mode : stricterMode(agent.mode, mode);
}

/** Whether the agent is offered `tool`: its list names it, or a `*` pattern in it matches. */
export function agentOffers(agent: AgentProfile, tool: string): boolean {
  if (agent.tools === undefined) return true;
  return agent.tools.some((pattern) => wildcardMatches(pattern, tool));
}
