export { Engine } from './engine.ts';
export type { EngineOptions, CommittedListener, InspectionListener, SubmitOptions } from './engine.ts';
export type { Command, ClientCommand, SystemCommand, CommandType, CommandResult } from './commands.ts';
export { SYSTEM_COMMAND_PREFIX, systemCommandId } from './commands.ts';
export { emptyThreadView, project, projectInto, rebuildView } from './projector.ts';
export type { ProjectedEvent } from './projector.ts';
export { advanceCursor } from './logInvariants.ts';
export { startOutcome } from './turnQueue.ts';
export type { StartOutcome, WhileRunning } from './turnQueue.ts';

export { machinesVersion } from './machinesVersion.ts';
