export { TurnloomError, IllegalTransition } from './errors.ts';
export type { ErrorCode, ErrorBody } from './errors.ts';
export { strictSend, assertAccepts, stateName } from './strictSend.ts';
export * from './engine/index.ts';
