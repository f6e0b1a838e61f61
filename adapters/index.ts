export { LmdbStore } from './lmdbStore.ts';
export type { ThreadStore, CommitBatch, Receipt, ThreadHead, ActorSnapshotRecord } from './threadStore.ts';
export * from './providers/index.ts';
