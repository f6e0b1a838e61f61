import { z } from 'zod';
import { TASK_TOOL, type TaskView, type ToolCall, type ToolExecutor, type ToolResult, taskToolSpec } from '../../domain/index.ts';
import { childThreadIdOf } from '../engine/commands.ts';
import { whenFold } from './foldWait.ts';
import { agentPermissions, turnAgent } from './turnAgent.ts';
import type { TurnWork } from './turnWork.ts';

const input = z
  .object({
    agent: z.string().min(1).max(64),
    prompt: z.string().min(1).max(100_000),
    description: z.string().max(200).optional(),
  })
  .strict();

/**
 * The turn's tools with `task` beside them: a `task` call is recorded as
 * delegated (the engine makes the child thread and starts its turn, on any
 * worker), then waits in the log for the child's outcome. A call taken up
 * after its worker died finds its delegation in the log and only waits:
 * there is never a second child. Every other call goes to `rest`.
 */
export function withTaskTool(work: TurnWork, rest: ToolExecutor): ToolExecutor {
  const agents = () => Object.entries(work.agents).map(([name, profile]) => ({ name, description: profile.description }));
  const isTask = (call: ToolCall) => call.name === TASK_TOOL;
  return {
    // Last, so the tools a model is used to keep their places (and a provider's prompt cache its prefix).
    specs: () => [...rest.specs().filter((spec) => spec.name !== TASK_TOOL), taskToolSpec(agents())],
    // Delegating changes nothing by itself: the child asks for what it does under its own (never wider) permissions.
    classify: (call) => (isTask(call) ? { kind: 'read', subject: String((call.input as { agent?: unknown } | null)?.agent ?? '') } : rest.classify(call)),
    validate: (call) => (isTask(call) ? taskProblem(work, call) : (rest.validate?.(call) ?? null)),
    preview: async (call) => (isTask(call) ? null : ((await rest.preview?.(call)) ?? null)),
    execute: (call, signal, turnId, onOutput) => (isTask(call) ? delegate(work, call) : rest.execute(call, signal, turnId, onOutput)),
  };
}

const partOfCall = (work: TurnWork, callId: string) => work.fold.context.view?.turns[work.turnId]?.messages[1].parts.find((part) => part.tool?.callId === callId);

/** Why a `task` call cannot be delegated as written: its input, or an agent nobody defined. */
function taskProblem(work: TurnWork, call: ToolCall): string | null {
  const parsed = input.safeParse(call.input);
  if (!parsed.success) return `invalid input for task: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('; ')}`;
  if (!Object.hasOwn(work.agents, parsed.data.agent)) return `no agent "${parsed.data.agent}"; the agents are ${Object.keys(work.agents).join(', ')}`;
  return null;
}

async function delegate(work: TurnWork, call: ToolCall): Promise<ToolResult> {
  const part = partOfCall(work, call.callId);
  if (!part) return { output: `no open tool call ${call.callId} to delegate`, isError: true };
  if (!part.task) {
    const problem = taskProblem(work, call);
    if (problem !== null) return { output: problem, isError: true };
    const { agent, prompt, description } = input.parse(call.input);
    const { mode } = agentPermissions(work, turnAgent(work).profile);
    await work.outbox.record([
      { type: 'task.delegated', turnId: work.turnId, partId: part.id, toolCallId: call.callId, childThreadId: childThreadIdOf(work.threadId, call.callId), agent, prompt, description: description ?? null, mode },
    ]);
  }
  const task = await whenFold(work, () => {
    const settled = partOfCall(work, call.callId)?.task;
    return settled && settled.status !== 'running' ? settled : undefined;
  });
  return resultOf(task);
}

function resultOf(task: TaskView): ToolResult {
  const where = `[sub-agent ${task.agent}, thread ${task.childThreadId}]`;
  if (task.status === 'completed') return { output: `${task.answer || '(the sub-agent gave no answer)'}\n\n${where}`, isError: false };
  return { output: `the sub-agent's turn ${task.status}: ${task.error ?? 'no reason given'}\n${where}`, isError: true };
}
