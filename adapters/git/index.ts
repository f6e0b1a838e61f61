export { Checkpoints } from './checkpoints.ts';
export type { CheckpointRef, DiffOptions } from './checkpoints.ts';
export type { Which } from './checkpointRefs.ts';
