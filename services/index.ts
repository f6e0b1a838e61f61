export { strictSend, assertAccepts, stateName } from '../machines/strictSend.ts';
export * from './engine/index.ts';
export * from './api/index.ts';
export * from './runtime/index.ts';
export * from './dispatch/index.ts';
export * from './worker/index.ts';
export { startTurnloomServer, VERSION } from './turnloomServer.ts';
export type { TurnloomServer, TurnloomServerOptions } from './turnloomServer.ts';
