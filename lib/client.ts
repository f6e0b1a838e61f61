// `turnloom/client`: talk to an engine (embedded, or elsewhere over NATS) without loading one.
export { TurnloomClient } from '../client/turnloomClient.ts';
export type { ClientOptions } from '../client/turnloomClient.ts';
export { TurnHandle } from '../client/turnHandle.ts';
export type { ApprovalDecision, SettledTurn, StartTurnOptions } from '../client/turnHandle.ts';
export { ThreadWatch } from '../protocol/threadWatch.ts';
export type { ThreadWatchContext, ThreadWatchOptions } from '../protocol/threadWatch.ts';
export type { ApiMethod, ApiParamsIn } from '../protocol/apiSchemas.ts';
export type { ApiResults, CommandResult, PendingApproval, StartOutcome, WireEvent, WorkerInfo } from '../protocol/apiResults.ts';
export type { LiveDelta } from '../protocol/liveBatch.ts';
export { NatsBus } from '../bus/natsBus.ts';
export { TurnloomError } from '../domain/errors.ts';
export type { ErrorCode } from '../domain/errors.ts';
export type { ApprovalView, PartView, ThreadSummary, ThreadView, TurnView } from '../domain/threadView.ts';
export type { Bus, BusMessage } from '../domain/bus.ts';
export type { PermissionMode, PermissionRule } from '../domain/permissions.ts';
export type { ProviderChoice, StoredEvent } from '../domain/domainEvents.ts';
export type { Usage } from '../domain/usage.ts';
export type { Logger, LogFields } from '../domain/logger.ts';
