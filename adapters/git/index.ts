export { Checkpoints } from './checkpoints.ts';
export type { CheckpointRef, CheckpointsOptions, DiffOptions } from './checkpoints.ts';
export type { Which } from './checkpointRefs.ts';
