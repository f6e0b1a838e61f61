export { TurnloomClient } from './turnloomClient.ts';
export type { ClientOptions } from './turnloomClient.ts';
export { ThreadWatch } from '../protocol/threadWatch.ts';
export type { ThreadWatchContext, ThreadWatchOptions } from '../protocol/threadWatch.ts';
export type { ApiCaller } from '../protocol/apiCaller.ts';
export { TurnHandle } from './turnHandle.ts';
export type { ApprovalDecision, SettledTurn, StartTurnOptions } from './turnHandle.ts';
export { TurnEventFeed, answerText } from './turnEvents.ts';
export type { ApprovalDecisionMade, ToolEndState, TurnEvent, TurnEventOf, TurnEventType } from './turnEvents.ts';
