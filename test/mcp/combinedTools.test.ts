import { describe, expect, it } from 'vitest';
import { combineTools } from '../../adapters/tools/index.ts';
import type { ToolCall, ToolExecutor } from '../../domain/index.ts';

const call = (name: string): ToolCall => ({ callId: 'call-1', name, input: {} });
const signal = new AbortController().signal;

/** An executor of plain tools that answers with its own name, and records the turns it was told ended. */
function executor(label: string, names: string[], handles?: (call: ToolCall) => boolean): ToolExecutor & { ended: string[] } {
  const ended: string[] = [];
  return {
    ended,
    specs: () => names.map((name) => ({ name, description: `${name} of ${label}`, inputSchema: { type: 'object' } })),
    ...(handles ? { handles } : {}),
    classify: (toolCall) => ({ kind: 'command', subject: `${label}:${toolCall.name}` }),
    execute: async (toolCall) => ({ output: `${label} ran ${toolCall.name}`, isError: false }),
    endTurn: async (turnId) => void ended.push(turnId),
  };
}

describe('combineTools', () => {
  it('offers every executor tools, the first keeping a name two offer', () => {
    const tools = combineTools(executor('workspace', ['read', 'bash']), executor('mcp', ['bash', 'everything__echo']));
    expect(tools.specs().map((spec) => `${spec.name}: ${spec.description}`)).toEqual(['read: read of workspace', 'bash: bash of workspace', 'everything__echo: everything__echo of mcp']);
  });

  it('sends each call to the executor that has its tool, by its specs or its handles', async () => {
    const own = executor('own', [], (toolCall) => toolCall.name.startsWith('own_'));
    const tools = combineTools(own, executor('workspace', ['read']), executor('mcp', ['everything__echo']));
    expect(await tools.execute(call('everything__echo'), signal)).toEqual({ output: 'mcp ran everything__echo', isError: false });
    expect(await tools.execute(call('read'), signal)).toEqual({ output: 'workspace ran read', isError: false });
    expect(await tools.execute(call('own_thing'), signal)).toEqual({ output: 'own ran own_thing', isError: false });
    expect(tools.classify(call('everything__echo'))).toEqual({ kind: 'command', subject: 'mcp:everything__echo' });
    expect(tools.handles!(call('read'))).toBe(true);
    expect(tools.handles!(call('nope'))).toBe(false);
    expect(await tools.execute(call('nope'), signal)).toEqual({ output: 'no tool named nope; available: read, everything__echo', isError: true });
  });

  it('ends the turn on every executor', async () => {
    const first = executor('a', ['x']);
    const second = executor('b', ['y']);
    await combineTools(first, second, { specs: () => [], classify: () => ({ kind: 'read', subject: '' }), execute: async () => ({ output: '', isError: false }) }).endTurn!('turn-1');
    expect([first.ended, second.ended]).toEqual([['turn-1'], ['turn-1']]);
  });
});
