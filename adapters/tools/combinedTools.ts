import type { ToolCall, ToolClass, ToolExecutor, ToolResult, ToolSpec } from '../../domain/index.ts';

/** Whether `executor` runs `call`: its own `handles` says, else whether it offers a tool of that name. */
const takes = (executor: ToolExecutor, call: ToolCall): boolean => (executor.handles ? executor.handles(call) : executor.specs().some((spec) => spec.name === call.name));

/**
 * Several executors as one (the workspace's tools and MCP servers'): the
 * model is shown all their tools, the first executor keeping a name two
 * offer, and each call goes to the first executor that takes it.
 */
export function combineTools(...executors: ToolExecutor[]): ToolExecutor {
  const owner = (call: ToolCall): ToolExecutor | undefined => executors.find((executor) => takes(executor, call));
  const specs = (): ToolSpec[] => {
    const seen = new Set<string>();
    return executors.flatMap((executor) => executor.specs()).filter((spec) => !seen.has(spec.name) && seen.add(spec.name));
  };
  const unknownTool = (call: ToolCall) => `no tool named ${call.name}; available: ${specs().map((spec) => spec.name).join(', ')}`;
  return {
    specs,
    handles: (call) => owner(call) !== undefined,
    // No executor has it, so nothing will run: it gets only its error, and nobody need be asked.
    classify: (call): ToolClass => owner(call)?.classify(call) ?? { kind: 'read', subject: '' },
    validate: (call) => {
      const executor = owner(call);
      return executor ? (executor.validate?.(call) ?? null) : unknownTool(call);
    },
    preview: async (call) => (await owner(call)?.preview?.(call)) ?? null,
    execute: async (call, signal, turnId, onOutput): Promise<ToolResult> => {
      const executor = owner(call);
      if (executor) return executor.execute(call, signal, turnId, onOutput);
      return { output: unknownTool(call), isError: true };
    },
    // Every executor ends its part, even when one fails; the first failure is then reported.
    endTurn: async (turnId) => {
      const ended = await Promise.allSettled(executors.map((executor) => executor.endTurn?.(turnId)));
      const failed = ended.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
