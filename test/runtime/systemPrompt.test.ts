import { describe, expect, it } from 'vitest';
import { renderSystemPrompt } from '../../services/runtime/systemPrompt.ts';
import { builtinAgents, taskToolSpec } from '../../domain/index.ts';
import type { RequestContext } from '../../domain/index.ts';

const context: RequestContext = { agent: 'build', workspace: '/work/repo', platform: 'linux', date: '2026-12-04', git: null, provider: 'scripted', model: null, instructions: [] };

describe('the system prompt', () => {
  it('says `task` is built in, and only tools from servers come from servers the user configured', () => {
    const task = taskToolSpec(Object.entries(builtinAgents).map(([name, profile]) => ({ name, description: profile.description })));
    const prompt = renderSystemPrompt(context, builtinAgents.build!, [task, { name: 'memory__echo', description: 'echo', inputSchema: { type: 'object' } }]);
    expect(prompt).toContain('`task` hands a self-contained piece of work to a sub-agent');
    expect(prompt).toContain('Other tools (memory__echo) come from tool servers the user configured');
    expect(prompt).not.toMatch(/Other tools \([^)]*\btask\b/);
  });
});
