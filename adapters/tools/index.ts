export { WorkspaceTools } from './workspaceTools.ts';
export type { WorkspaceToolsOptions } from './workspaceTools.ts';
export { workspaceToolNames } from './toolDefinition.ts';
export type { WorkspaceToolName } from './toolDefinition.ts';
export { combineTools } from './combinedTools.ts';
