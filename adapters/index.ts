export { LmdbStore, DataFolderLocked } from './lmdbStore.ts';
export * from './providers/index.ts';
