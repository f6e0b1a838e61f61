export { LmdbStore, DataFolderLocked } from './lmdbStore.ts';
export type { ThreadStore, CommitBatch, Receipt, ThreadHead, ActorSnapshotRecord, ListedThread } from './threadStore.ts';
export * from './providers/index.ts';
