export { WorkspaceTools } from './workspaceTools.ts';
export type { WorkspaceToolsOptions } from './workspaceTools.ts';
export { workspaceToolNames } from './toolDefinition.ts';
export type { WorkspaceToolName } from './toolDefinition.ts';
export { combineTools } from './combinedTools.ts';
export { FunctionTools, isFunctionTool, tool } from './functionTool.ts';
export type { FunctionTool, ToolCallContext, ToolOptions, ToolTurn } from './functionTool.ts';
