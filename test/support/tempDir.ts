import { tempFolder } from '../../cli/tempFolder.ts';

/** A fresh temp folder, removed by the returned cleanup. */
export const tempDir = (prefix = 'turnloom-'): { path: string; remove: () => void } => tempFolder(prefix);
