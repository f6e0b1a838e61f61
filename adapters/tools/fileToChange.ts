import { constants } from 'node:fs';
import { type FileHandle, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { openRegularFile } from './regularFile.ts';
import { ToolError } from './toolError.ts';
import type { Workspace, WorkspacePath } from './workspacePath.ts';

const onAnotherDevice = (shown: string): ToolError =>
  new ToolError(`${shown} is on another device than the workspace (something mounted inside it, which may be shared with anywhere); write and edit refuse it`);

/** The device of `folder`, or of its nearest parent that exists. */
async function deviceOf(folder: string): Promise<number> {
  for (let at = folder; ; at = path.dirname(at)) {
    const stats = await stat(at).catch(() => null);
    if (stats !== null || path.dirname(at) === at) return stats?.dev ?? -1;
  }
}

/**
 * Opens `target` to change it, with `flags` (O_CREAT: made, with its
 * missing folders, when it is not there). Refused: a file whose change
 * would land outside the workspace although its path is inside, one with
 * more than one link (a hard link is the same file under another name,
 * anywhere on its device) or on another device than the workspace (a
 * mount); judged by the file opened, and for a new file by the folder it
 * goes in, before anything is made there.
 */
export async function openFileToChange(workspace: Workspace, target: WorkspacePath, flags: number): Promise<FileHandle> {
  if ((await deviceOf(path.dirname(target.real))) !== workspace.device) throw onAnotherDevice(target.relative);
  if ((flags & constants.O_CREAT) !== 0) await mkdir(path.dirname(target.real), { recursive: true });
  const { handle, stats } = await openRegularFile(target.real, target.relative, flags);
  const refusal =
    stats.dev !== workspace.device
      ? onAnotherDevice(target.relative)
      : stats.nlink > 1
        ? new ToolError(
            `${target.relative} has ${stats.nlink} hard links, so writing it would also change the file under its other names, which may be outside the workspace; write and edit refuse it`,
          )
        : null;
  if (refusal === null) return handle;
  await handle.close();
  throw refusal;
}

/** Makes `content` the whole of an opened file. */
export async function replaceContent(handle: FileHandle, content: string): Promise<void> {
  const bytes = Buffer.from(content);
  await handle.truncate(0);
  for (let written = 0; written < bytes.length; ) written += (await handle.write(bytes, written, bytes.length - written, written)).bytesWritten;
}
