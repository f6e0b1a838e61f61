// `turnloom`: the embedding API. One call opens a runtime (store, bus, engine, API, a worker) and its client.
export { openRuntime } from './openRuntime.ts';
export type { Runtime, RuntimeOptions } from './openRuntime.ts';
export { tool } from '../adapters/tools/functionTool.ts';
export type { FunctionTool, ToolCallContext, ToolOptions } from '../adapters/tools/functionTool.ts';
export type { ToolKind } from '../domain/providerAdapter.ts';
export { startTurnloomServer } from '../services/turnloomServer.ts';
export type { TurnloomServer, TurnloomServerOptions } from '../services/turnloomServer.ts';
export { LmdbStore } from '../adapters/lmdbStore.ts';
export { InProcessHub } from '../bus/inProcessBus.ts';
export { silentLogger } from '../domain/logger.ts';
export { VERSION } from '../domain/version.ts';
export * from './client.ts';
