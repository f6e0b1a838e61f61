import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Checkpoints } from '../adapters/git/index.ts';
import { TurnloomError, type TurnView } from '../domain/index.ts';
import type { RevertResult } from '../protocol/apiResults.ts';
import { Worker } from '../services/worker/worker.ts';
import { parseOptions } from './cliErrors.ts';
import { undoUsage } from './commandUsage.ts';
import { clip, terminalJson, visible } from './terminalText.ts';
import { type ThreadFolder, openForThread, pickThread, threadFolderOptions } from './threads/threadFolder.ts';
import { threadTurns } from './threads/threadTurns.ts';
import { workspaceSetup } from './workspaceSetup.ts';

const settled = ['completed', 'failed', 'interrupted'];

/**
 * `turnloom undo [THREAD]`: puts back what the thread's last turn still
 * standing changed, through the API's `checkpoint.revert` (files changed
 * since are refused unless `--force`; the work tree is saved first). Each
 * undo goes one turn further back, as far as turns that changed files go.
 */
export async function undoCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions('undo', { args, allowPositionals: true, options: { ...threadFolderOptions, force: { type: 'boolean', default: false } } });
  if (values.help) {
    console.log(undoUsage);
    return 0;
  }
  const { folder, given } = await openForThread('undo', values, positionals);
  try {
    const threadId = await pickThread(folder, given);
    const { thread, turns } = await threadTurns(folder.client, threadId);
    // The files are where the thread's turns changed them, whichever folder this runs in.
    const workspace = thread.workspace ?? resolve(values.cwd);
    if (!statSync(workspace, { throwIfNoEntry: false })?.isDirectory()) throw new TurnloomError('not_found', `undo: the workspace of thread ${threadId}, ${workspace}, is not a folder any more`);
    if ((await Checkpoints.topLevel(workspace)) === null) throw new TurnloomError('not_found', `undo: ${workspace} is not a git repository: its turns keep no checkpoints, so there is nothing to undo`);
    const target = lastStanding(threadId, turns);
    const result = await revert(folder, thread.environment, workspace, threadId, target.turn, values.force);
    const report = {
      threadId,
      turnId: target.turn.id,
      turn: target.number,
      input: target.turn.messages[0].parts.map((part) => part.text).join('\n\n'),
      files: result.files.map(({ path, status }) => ({ path, status })),
      filesChanged: result.filesChanged,
      filesOmitted: result.filesOmitted,
      saved: result.saved,
    };
    if (values.json) console.log(terminalJson(report));
    else {
      const listed = report.files.map((file) => `${visible(file.path)} (${undoneAs[file.status] ?? file.status})`).join(', ');
      const more = report.filesOmitted > 0 ? ` and ${report.filesOmitted} more` : '';
      console.log(`undid turn ${report.turn} (${report.turnId}) "${visible(clip(report.input.split('\n')[0]!, 60))}": reverted ${report.filesChanged} file${report.filesChanged === 1 ? '' : 's'}: ${listed}${more}`);
      console.log(`the work tree before the undo is kept as ${report.saved.ref} (commit ${report.saved.commit.slice(0, 12)}); the model no longer sees that turn`);
    }
    return 0;
  } finally {
    await folder.close();
  }
}

/** What undoing did to a file, by the status of the revert's change: a file the turn made is removed, one it removed is back. */
const undoneAs: Record<string, string> = { added: 'restored', deleted: 'removed', modified: 'restored', renamed: 'renamed back' };

/** The newest turn not undone yet, when it changed files; else why there is nothing to undo, in one line. */
function lastStanding(threadId: string, turns: TurnView[]): { turn: TurnView; number: number } {
  let index = turns.length - 1;
  while (index >= 0 && turns[index]!.revertedAt !== null) index -= 1;
  if (index < 0) throw new TurnloomError('not_found', turns.length === 0 ? `undo: thread ${threadId} has no turns yet` : `undo: nothing left to undo: every turn of thread ${threadId} that changed files is undone already`);
  const turn = turns[index]!;
  const named = `turn ${index + 1} (${turn.id})`;
  if (!settled.includes(turn.state)) throw new TurnloomError('conflict', `undo: ${named} is still open (a run that stopped left it): finish it with turnloom run --continue, or let it settle, first`);
  if (!turn.checkpoint?.diff || turn.checkpoint.diff.filesChanged === 0) {
    throw new TurnloomError(
      'not_found',
      index === turns.length - 1 ? `undo: nothing to undo: the last turn, ${named}, changed no files` : `undo: nothing left to undo: ${named} changed no files, and the turns after it are undone already`,
    );
  }
  return { turn, number: index + 1 };
}

/**
 * The revert, as any client asks for it; its files are put back by a worker
 * of the thread's environment on its workspace: one started here for that,
 * which runs no turns.
 */
async function revert(folder: ThreadFolder, environment: string, workspace: string, threadId: string, turn: TurnView, force: boolean): Promise<RevertResult> {
  const setup = await workspaceSetup('undo', '--cwd', workspace, folder.dataDir);
  const worker = await new Worker({ bus: folder.hub.connect(), environment, workspace, checkpoints: setup.checkpoints, takes: () => false, adapterFor: () => undefined, sideWork: false }).start();
  try {
    return await folder.client.call('checkpoint.revert', { threadId, checkpointId: turn.id, force });
  } catch (error) {
    if (error instanceof TurnloomError && error.code === 'conflict' && !force) throw new TurnloomError('conflict', `undo: ${error.message.replace(/, or revert with force\b/, ', or run turnloom undo --force')}`, error.details);
    throw error;
  } finally {
    await worker.stop();
  }
}
