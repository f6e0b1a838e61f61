export { Worker } from './worker.ts';
export type { WorkerOptions } from './worker.ts';
export type { TurnLoopOptions, CheckpointSetting } from './turnLoop.ts';
export { WorkerLink } from './workerLink.ts';
