// The leaf of the dependency graph: the words every layer speaks (events,
// views, errors) and the ports the outside is reached through (store, bus,
// provider, tools). Nothing here imports anything of ours.
export type { PartKind, Usage, ProviderChoice, WorkerProcess, RevertedTurn, ToolOutcome, InterruptCause, ActivityKind, CompactionSetting, DomainEvent, DomainEventType, DomainEventOf, StoredEvent } from './domainEvents.ts';
export { DEFAULT_ENVIRONMENT } from './domainEvents.ts';
export { zeroUsage, addUsage } from './usage.ts';
export type { ThreadView, SessionView, TurnView, MessageView, PartView, ToolCallView, ApprovalView, StepView, ActivityView, ThreadSummary, QueuedTurnView, InboxItemView, ContextView } from './threadView.ts';
export { QUEUE_PREVIEW_CHARS, isOpenPart, queuedTurnView, summarize, waitingInput } from './threadView.ts';
export type { LogCursor } from './logCursor.ts';
export { advanceCursor } from './logInvariants.ts';
export { emptyCursor } from './logCursor.ts';
export type { ErrorCode, ErrorBody, Invariant } from './errors.ts';
export { TurnloomError, IllegalTransition, InvariantViolation } from './errors.ts';
export type { ThreadStore, ReplicaStore, ReplicaMark, CommitBatch, Receipt, Refusal, ThreadHead, ActorSnapshotRecord, ListedThread, PersistedActor, PersistedActorTree, LifecycleMachineName } from './threadStore.ts';
export type { Bus, BusMessage, BusStatus, BusSubscription, PublishOptions, RequestOptions, SubscribeOptions, BusErrorKind } from './bus.ts';
export { BusError } from './bus.ts';
export type { ProviderAdapter, ProviderRequest, ProviderMessage, AssistantPart, ToolSpec, ToolCall, ToolResult, ToolExecutor, ToolKind, ToolClass } from './providerAdapter.ts';
export { ProviderError } from './providerAdapter.ts';
export type { ProviderEvent, ProviderErrorInfo, ProviderErrorKind, StopReason } from './providerEvents.ts';
export { wellFormed, wellFormedString } from './wellFormed.ts';
export type { PermissionMode, PermissionDecision, PermissionRule, Permissions, PermissionCall } from './permissions.ts';
export type { CommandLine } from './commandLine.ts';
export { splitCommandLine } from './commandLine.ts';
export { permissionModes, defaultPermissions, decidePermission } from './permissions.ts';
export { childId } from './derivedIds.ts';
export { cutToFit, jsonBytes } from './cutToFit.ts';
export type { ActorTransition, RefusedEvent, Inspection } from './inspection.ts';
export type { CheckpointSide, FileChange, FileChanges, CheckpointDiff, CapturedTree, TurnCheckpoint, WorkspaceCheckpoints } from './checkpoints.ts';
export { fitChanges, fitEvent, recordedChanges, recordedDiff, summarizeChanges } from './fileChanges.ts';
export type { SideTaskKind, SideTaskReport } from './sideWork.ts';
export { sideTaskKinds, sideTextLimits } from './sideWork.ts';
export type { Logger, LogFields, LogMethod } from './logger.ts';
export { errorFields, silentLogger } from './logger.ts';
export { type McpServerSpec, isStdioServer, mcpServerNamePattern } from './mcpServer.ts';
export { VERSION } from './version.ts';
export type { RequestHeader, RequestContext, InstructionsFile } from './requestRecord.ts';
export type { AgentProfile } from './agentProfile.ts';
export { DEFAULT_AGENT, builtinAgents, agentMode, agentOffers } from './agentProfile.ts';
