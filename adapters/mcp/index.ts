export { McpTools } from './mcpTools.ts';
export type { McpToolsOptions } from './mcpTools.ts';
export type { McpServerState, McpServerStatus } from './mcpServerConnection.ts';
export { offeredToolName } from './toolNames.ts';
