import { constants, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { ToolError } from './toolError.ts';

export const notRegularFile = (shown: string): ToolError => new ToolError(`${shown} is not a regular file`);

/** Not every platform has them (Windows), and there the open is as it was. */
const noFollow = constants.O_NOFOLLOW ?? 0;
const noBlock = constants.O_NONBLOCK ?? 0;

/**
 * Opens `real` (resolved, so no symlink is left in it) with `flags`, and
 * refuses anything but a regular file, judged by what was opened, not by a
 * stat before the open, which a file swapped in between would fool. The open
 * follows no symlink swapped in for the file since, and does not wait for a
 * FIFO's other end (which may never come).
 */
export async function openRegularFile(real: string, shown: string, flags: number): Promise<{ handle: FileHandle; stats: Stats }> {
  const handle = await open(real, flags | noFollow | noBlock, 0o666).catch((error: NodeJS.ErrnoException) => {
    // ELOOP: a symlink where the file was; ENXIO: a FIFO, opened for writing, with nobody reading it.
    throw error.code === 'ELOOP' || error.code === 'ENXIO' ? notRegularFile(shown) : error;
  });
  const stats = await handle.stat();
  if (stats.isFile()) return { handle, stats };
  await handle.close();
  throw stats.isDirectory() ? new ToolError(`${shown} is a directory; use list to see what is in it`) : notRegularFile(shown);
}

/** The whole content of a regular file; throws for anything else. */
export async function readRegularFile(real: string, signal: AbortSignal): Promise<Buffer> {
  const { handle } = await openRegularFile(real, real, constants.O_RDONLY);
  try {
    return await handle.readFile({ signal });
  } finally {
    await handle.close();
  }
}
