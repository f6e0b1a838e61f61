export { Checkpoints } from './checkpoints.ts';
export type { CheckpointRef, CheckpointsOptions, DiffOptions, RepositoryLocation } from './checkpoints.ts';
export type { Which } from './checkpointRefs.ts';
export { repositoryState } from './repositoryState.ts';
export type { RepositoryState } from './repositoryState.ts';
