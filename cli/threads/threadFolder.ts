import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DATA_FOLDER_MARKER, isDataFolderMarker } from '../../adapters/dataFolder.ts';
import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { TurnloomError, type ThreadSummary } from '../../domain/index.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import { UsageError } from '../cliErrors.ts';
import { latestThread } from '../latestThread.ts';
import { openStore } from '../openStore.ts';
import { dataFolderFor } from '../workspaceSetup.ts';

/** The options every thread command takes (`threads`, `show`, `undo`). */
export const threadFolderOptions = {
  help: { type: 'boolean', short: 'h', default: false },
  cwd: { type: 'string', default: '.' },
  data: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

/** A data folder opened as every client sees it: its store under an engine and API of this process, called through the client. */
export interface ThreadFolder {
  dataDir: string;
  hub: InProcessHub;
  client: TurnloomClient;
  close(): Promise<void>;
}

/**
 * Where a thread command reads: `--data`, else the folder `run` uses for
 * the workspace `--cwd` is in. `null` when that default folder does not
 * exist (no run there yet); a folder named with `--data` must exist and be
 * a data folder, so a typo is said rather than a new folder made.
 */
export async function threadFolderPath(command: string, cwd: string, data: string | undefined): Promise<string | null> {
  if (!statSync(resolve(cwd), { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${command}: --cwd ${resolve(cwd)} is not a folder`);
  const { path: dataDir } = await dataFolderFor(cwd, data);
  if (data === undefined) return existsSync(dataDir) ? dataDir : null;
  if (!statSync(dataDir, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${command}: --data ${dataDir}: no such folder`);
  if (!isDataFolderMarker(join(dataDir, DATA_FOLDER_MARKER))) throw new UsageError(`${command}: --data ${dataDir} is not a turnloom data folder (it has no ${DATA_FOLDER_MARKER} file)`);
  return dataDir;
}

/**
 * Opens the folder with an engine and its API on a bus of this process, no
 * worker: reads go through the API's checks like any client's. A folder
 * another process holds (a `run` going, `serve`) is refused by the store's
 * lock at once, in one line: nothing waits for it and nothing is written.
 */
export async function openThreadFolder(dataDir: string): Promise<ThreadFolder> {
  const store = openStore(dataDir);
  const hub = new InProcessHub();
  const server = await startTurnloomServer({ bus: hub.connect(), store });
  const client = new TurnloomClient(hub.connect());
  return {
    dataDir,
    hub,
    client,
    close: async () => {
      await client.bus.close().catch(() => undefined);
      await server.stop();
    },
  };
}

/** Every thread of the folder, newest first, a page of the API at a time. */
export async function listThreads(client: TurnloomClient): Promise<ThreadSummary[]> {
  const threads: ThreadSummary[] = [];
  for (let cursor: string | undefined; ; ) {
    const page = await client.call('thread.list', { limit: 1_000, ...(cursor === undefined ? {} : { cursor }) });
    threads.push(...page.threads);
    if (page.nextCursor === null) return threads;
    cursor = page.nextCursor;
  }
}

/** The thread a command names, checked to be in the folder, or the one that ran last there (as `run --continue` picks it). */
export async function pickThread(folder: ThreadFolder, given: string | undefined): Promise<string> {
  if (given !== undefined) {
    try {
      await folder.client.call('thread.get', { threadId: given, turns: 1 });
      return given;
    } catch (error) {
      if (error instanceof TurnloomError && (error.code === 'not_found' || error.code === 'invalid_payload')) {
        throw new TurnloomError('not_found', `no thread ${given} in ${folder.dataDir}: see turnloom threads (or pass the --data folder it was run with)`, { threadId: given });
      }
      throw error;
    }
  }
  const last = latestThread(await listThreads(folder.client));
  if (last === null) throw new TurnloomError('not_found', `no thread in ${folder.dataDir} yet: start one with turnloom run "…"`, { dataDir: folder.dataDir });
  return last;
}

/**
 * What `show` and `undo` start from: at most one THREAD argument, and the
 * folder it is in opened (a workspace where nothing ran yet has no thread to name).
 */
export async function openForThread(command: string, values: { cwd: string; data?: string | undefined }, positionals: string[]): Promise<{ folder: ThreadFolder; given: string | undefined }> {
  if (positionals.length > 1) throw new UsageError(`${command}: one thread at a time, not ${positionals.length}; see turnloom ${command} --help`);
  const given = positionals[0];
  const dataDir = await threadFolderPath(command, values.cwd, values.data);
  if (dataDir === null) throw noThreadsYet(command, values.cwd, given);
  return { folder: await openThreadFolder(dataDir), given };
}

/** The same, for a workspace whose default data folder does not exist yet: there is no thread to name. */
export function noThreadsYet(command: string, cwd: string, given: string | undefined): TurnloomError {
  const what = given === undefined ? 'no thread' : `no thread ${given}`;
  return new TurnloomError('not_found', `${command}: ${what} for ${resolve(cwd)}: nothing has run in this workspace yet (or pass the --data folder it was run with)`);
}
