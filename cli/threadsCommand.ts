import { parseOptions } from './cliErrors.ts';
import { threadsUsage } from './commandUsage.ts';
import { relativeTime } from './relativeTime.ts';
import { clip, terminalJson, visible } from './terminalText.ts';
import { listThreads, openThreadFolder, threadFolderOptions, threadFolderPath } from './threads/threadFolder.ts';
import { threadState } from './threads/threadState.ts';

/** `turnloom threads`: the threads of the workspace's data folder (or `--data`'s), newest first; sub-agents' threads are their parents' business. */
export async function threadsCommand(args: string[]): Promise<number> {
  const { values } = parseOptions('threads', { args, options: { ...threadFolderOptions, all: { type: 'boolean', default: false } } });
  if (values.help) {
    console.log(threadsUsage);
    return 0;
  }
  const dataDir = await threadFolderPath('threads', values.cwd, values.data);
  if (dataDir === null) {
    if (values.json) console.log(terminalJson({ dataDir: null, threads: [] }));
    else console.log('no threads yet in this workspace: start one with turnloom run "…"');
    return 0;
  }
  const folder = await openThreadFolder(dataDir);
  let listed;
  try {
    listed = await listThreads(folder.client);
  } finally {
    await folder.close();
  }
  const threads = listed
    .filter((thread) => !thread.parentThreadId && (values.all || !thread.archived))
    .map((thread) => ({
      id: thread.id,
      title: thread.title,
      state: threadState(thread),
      turns: thread.turnCount,
      archived: thread.archived,
      createdAt: new Date(thread.createdAt).toISOString(),
      updatedAt: new Date(thread.updatedAt).toISOString(),
      updated: thread.updatedAt,
    }));
  if (values.json) {
    console.log(terminalJson({ dataDir, threads: threads.map(({ updated: _updated, ...thread }) => thread) }));
    return 0;
  }
  if (threads.length === 0) {
    console.log(`no threads in ${dataDir} yet: start one with turnloom run "…"`);
    return 0;
  }
  const rows = threads.map((thread) => [thread.id, thread.state, `${thread.turns} turn${thread.turns === 1 ? '' : 's'}`, relativeTime(thread.updated), `${visible(clip(thread.title, 80))}${thread.archived ? ' (archived)' : ''}`]);
  const widths = rows[0]!.slice(0, -1).map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) console.log(row.map((cell, column) => (column < widths.length ? cell.padEnd(widths[column]!) : cell)).join('  '));
  return 0;
}
