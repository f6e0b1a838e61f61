import type { ToolCall, ToolExecutor, ToolResult } from '../../domain/index.ts';

const noTool = (call: ToolCall) => `no tool named ${call.name} is available: this worker serves no workspace`;

const noWorkspace: ToolExecutor = {
  specs: () => [],
  // Nothing can run here, so there is nothing to ask anyone about: the call only gets its error.
  classify: () => ({ kind: 'read', subject: '' }),
  validate: (call) => noTool(call),
  execute: async (call) => ({ output: noTool(call), isError: true }),
};

/**
 * The tools one turn may call: the provider's own (a replay's recorded
 * results, a script's canned ones) for the calls it takes, the worker's
 * workspace tools for every other. The model is shown the workspace's.
 */
export function turnTools(own: ToolExecutor | undefined, workspace: ToolExecutor | undefined): ToolExecutor {
  const fallback = workspace ?? noWorkspace;
  if (!own) return fallback;
  const pick = (call: ToolCall): ToolExecutor => (own.handles === undefined || own.handles(call) ? own : fallback);
  return {
    specs: () => (workspace ? workspace.specs() : own.specs()),
    classify: (call) => pick(call).classify(call),
    validate: (call) => pick(call).validate?.(call) ?? null,
    preview: async (call) => (await pick(call).preview?.(call)) ?? null,
    execute: (call, signal, turnId, onOutput): Promise<ToolResult> => pick(call).execute(call, signal, turnId, onOutput),
  };
}
