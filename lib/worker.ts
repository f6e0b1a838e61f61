// `turnloom/worker`: run turns for an engine elsewhere (over NATS), in a workspace of this machine, with extension hooks.
export { Worker } from '../services/worker/worker.ts';
export type { WorkerOptions } from '../services/worker/worker.ts';
export { openWorkspace } from '../services/worker/openWorkspace.ts';
export type { Workspace, WorkspaceOptions } from '../services/worker/openWorkspace.ts';
export { CompactionRefused, HookFailed, TurnRejected } from '../services/worker/turnHooks.ts';
export type { HookContext, NamedHook, PreStepDecision, PreStepHook, RequestErrorHook, RequestHook, TurnHooks, TurnStoppingHook } from '../services/worker/turnHooks.ts';
export { NatsBus } from '../bus/natsBus.ts';
export type { ProviderAdapter, ProviderRequest, ProviderMessage, ToolSpec, ToolExecutor, ToolKind, ToolCall, ToolClass, ToolResult } from '../domain/providerAdapter.ts';
export type { ProviderChoice } from '../domain/domainEvents.ts';
export type { Logger, LogFields } from '../domain/logger.ts';
export { McpTools } from '../adapters/mcp/mcpTools.ts';
export type { McpToolsOptions } from '../adapters/mcp/mcpTools.ts';
export type { McpServerSpec } from '../domain/mcpServer.ts';
export { combineTools } from '../adapters/tools/combinedTools.ts';
export { tool } from '../adapters/tools/functionTool.ts';
export type { FunctionTool, ToolCallContext, ToolOptions } from '../adapters/tools/functionTool.ts';
export { builtinAgents } from '../domain/agentProfile.ts';
export type { AgentProfile } from '../domain/agentProfile.ts';
