import { describe, expect, it } from 'vitest';
import { DEFAULT_DELEGATION_LIMITS, agentMode, builtinAgents, delegationRefusal, stricterMode } from '../../domain/index.ts';

describe('delegation budgets and modes, as pure rules', () => {
  const parent = (depth: number) => ({ threadId: 'thr_p', turnId: 'turn_p', partId: 'p', toolCallId: 'c', depth });

  it('lets a thread delegate down to the depth limit and no further, and a turn start only so many children', () => {
    expect(delegationRefusal(null, 0, DEFAULT_DELEGATION_LIMITS)).toBeNull();
    expect(delegationRefusal(parent(1), 0, DEFAULT_DELEGATION_LIMITS)).toBeNull();
    expect(delegationRefusal(parent(2), 0, DEFAULT_DELEGATION_LIMITS)).toMatch(/^delegation refused: this agent is already at depth 2 of at most 2/);
    expect(delegationRefusal(null, 7, DEFAULT_DELEGATION_LIMITS)).toBeNull();
    expect(delegationRefusal(null, 8, DEFAULT_DELEGATION_LIMITS)).toMatch(/^delegation refused: this turn has already started 8 sub-agents/);
    expect(delegationRefusal(parent(5), 0, { maxDepth: 9, maxChildrenPerTurn: 1 })).toBeNull();
  });

  it('never widens a mode: the stricter of two, whichever order they come in', () => {
    const modes = ['read-only', 'ask', 'auto-edits', 'full'] as const;
    for (const [i, a] of modes.entries()) for (const [j, b] of modes.entries()) expect(stricterMode(a, b)).toBe(modes[Math.min(i, j)]);
    expect(agentMode('full', builtinAgents.explore!)).toBe('read-only');
    expect(agentMode('ask', builtinAgents.general!)).toBe('ask');
  });

  it('offers delegation to the agents that do work, never to the read-only ones', () => {
    expect(builtinAgents.build!.tools).toBeUndefined();
    expect(builtinAgents.general!.tools).toBeUndefined();
    expect(builtinAgents.plan!.tools).not.toContain('task');
    expect(builtinAgents.explore!.tools).not.toContain('task');
  });
});
