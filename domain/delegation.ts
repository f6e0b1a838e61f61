import type { PermissionMode } from './permissions.ts';
import type { ToolSpec } from './providerAdapter.ts';
import type { Usage } from './usage.ts';

/** The tool a model delegates with: a child agent, in a thread of its own, does one turn and answers. */
export const TASK_TOOL = 'task';

/**
 * Where a child thread comes from, in its head (`thread.created`): the
 * parent thread, turn and tool call it answers, and how deep it is (a child
 * of a thread without a parent is at depth 1). Kept in the log, so no
 * restart resets the budget.
 */
export interface ThreadParent {
  threadId: string;
  turnId: string;
  partId: string;
  toolCallId: string;
  depth: number;
}

/** How far delegation may go: how deep a tree of children, and how many children one turn may start. */
export interface DelegationLimits {
  maxDepth: number;
  maxChildrenPerTurn: number;
}

export const DEFAULT_DELEGATION_LIMITS: DelegationLimits = { maxDepth: 2, maxChildrenPerTurn: 8 };

/** How a child's turn ended, as its parent's tool call reads it. */
export type TaskStatus = 'completed' | 'failed' | 'interrupted' | 'refused';

/** A delegated call, as the parent's part shows it: its child, and once it settled, how. */
export interface TaskView {
  childThreadId: string;
  agent: string;
  prompt: string;
  description: string | null;
  /** The most the child may do (never wider than the parent's thread). */
  mode: PermissionMode;
  /** `running` until the child's turn settled. */
  status: 'running' | TaskStatus;
  /** The child's final answer (its last turn's text); `null` until it completed. */
  answer: string | null;
  error: string | null;
  usage: Usage | null;
}

/** What the model writes to delegate. */
export interface TaskInput {
  agent: string;
  prompt: string;
  description?: string;
}

/** The task tool as the model is shown it. */
export function taskToolSpec(agents: ReadonlyArray<{ name: string; description: string }>): ToolSpec {
  return {
    name: TASK_TOOL,
    description: [
      'Hand a self-contained piece of work to a sub-agent, which does it in a thread of its own and answers with its result.',
      'Several task calls in one answer run at the same time. The sub-agent sees only the prompt you give it, so say everything it needs.',
      `Agents: ${agents.map((agent) => `${agent.name} (${agent.description})`).join('; ')}.`,
    ].join(' '),
    inputSchema: {
      type: 'object',
      properties: {
        agent: { type: 'string', enum: agents.map((agent) => agent.name), description: 'The agent that does the work.' },
        prompt: { type: 'string', minLength: 1, maxLength: 100_000, description: 'What the agent is to do, with everything it needs to know.' },
        description: { type: 'string', maxLength: 200, description: 'A few words saying what the task is, shown to people following along.' },
      },
      required: ['agent', 'prompt'],
      additionalProperties: false,
    },
  };
}

/**
 * Why a turn may not start another child (`null`: it may): the tree is as
 * deep as it may grow, or the turn has started as many as it may.
 */
export function delegationRefusal(parent: ThreadParent | null, childrenOfTurn: number, limits: DelegationLimits): string | null {
  const depth = (parent?.depth ?? 0) + 1;
  if (depth > limits.maxDepth) {
    return `delegation refused: this agent is already at depth ${depth - 1} of at most ${limits.maxDepth}; do the work yourself instead of delegating it`;
  }
  if (childrenOfTurn >= limits.maxChildrenPerTurn) {
    return `delegation refused: this turn has already started ${childrenOfTurn} sub-agents, the most one turn may; do the rest yourself`;
  }
  return null;
}
