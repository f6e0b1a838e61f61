export { Engine } from './engine.ts';
export type { EngineOptions, CommittedListener, InspectionListener, SubmitOptions } from './engine.ts';
export type { Command, ClientCommand, SystemCommand, CommandType, CommandResult } from './commands.ts';
export { systemCommandId } from './commands.ts';
export { startOutcome } from './turnQueue.ts';
export type { WhileRunning } from './turnQueue.ts';

export { machinesVersion } from './machinesVersion.ts';
