import { parseOptions } from './cliErrors.ts';
import { showUsage } from './commandUsage.ts';
import { relativeTime } from './relativeTime.ts';
import { clip, terminalJson, visible } from './terminalText.ts';
import { openForThread, pickThread, threadFolderOptions } from './threads/threadFolder.ts';
import { type TurnRecord, turnRecord } from './threads/turnRecord.ts';
import { type TurnHeader, turnRequests } from './threads/turnRequests.ts';
import { threadTurns } from './threads/threadTurns.ts';
import { threadState } from './threads/threadState.ts';

/** The thread's head as `show` reports it. */
interface ShownThread {
  id: string;
  title: string;
  state: string;
  workspace: string | null;
  mode: string;
  turns: number;
  createdAt: string;
  updatedAt: string;
  dataDir: string;
}

/** Lines of a tool call's output shown under it; the rest is counted (`--json` has all of it). */
const OUTPUT_LINES = 3;

/** `turnloom show [THREAD]`: a thread's turns (the workspace's last one by default), with `--request` what each model call was told. */
export async function showCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions('show', { args, allowPositionals: true, options: { ...threadFolderOptions, request: { type: 'boolean', default: false } } });
  if (values.help) {
    console.log(showUsage);
    return 0;
  }
  const { folder, given } = await openForThread('show', values, positionals);
  let shown: { thread: ShownThread; turns: TurnRecord[] };
  try {
    const threadId = await pickThread(folder, given);
    const { thread, turns } = await threadTurns(folder.client, threadId);
    const requests = values.request ? await turnRequests(folder.client, threadId) : null;
    shown = {
      thread: {
        id: thread.id,
        title: thread.title,
        state: threadState({ openTurnId: thread.openTurnId, sessionState: thread.session.state }),
        workspace: thread.workspace,
        mode: thread.permissions.mode,
        turns: turns.length,
        createdAt: new Date(thread.createdAt).toISOString(),
        updatedAt: new Date(thread.updatedAt).toISOString(),
        dataDir: folder.dataDir,
      },
      turns: turns.map((turn, index) => turnRecord(turn, index + 1, requests?.get(turn.id) ?? (requests ? { context: null, headers: [] } : undefined))),
    };
  } finally {
    await folder.close();
  }
  if (values.json) console.log(terminalJson(shown));
  else console.log(showLines(shown.thread, shown.turns).join('\n'));
  return 0;
}

function showLines(thread: ShownThread, turns: TurnRecord[]): string[] {
  const lines = [
    `thread ${thread.id} · ${visible(thread.title)}`,
    `  ${thread.state} · ${thread.turns} turn${thread.turns === 1 ? '' : 's'} · mode ${thread.mode} · last active ${relativeTime(Date.parse(thread.updatedAt))} (${thread.updatedAt})${thread.workspace ? ` · ${visible(thread.workspace)}` : ''}`,
  ];
  let lastDigest = null as { digest: string; turn: number } | null;
  for (const turn of turns) {
    lines.push('', `turn ${turn.number} · ${turn.id} · ${turn.state} · ${turn.requestedAt}${turn.undone ? ' · undone' : ''}`);
    lines.push(...indent(visible(turn.input), '› '));
    if (turn.request) {
      const { context, headers } = turn.request;
      if (context) lines.push(`  context: ${contextLine(context)}`);
      for (const [index, header] of headers.entries()) {
        // The first header is the one the turn started with: a step number says something only for one it changed to.
        const from = index === 0 ? '' : ` from step ${header.fromStep}`;
        if (lastDigest?.digest === header.digest) {
          lines.push(`  system prompt${from}: the same as turn ${lastDigest.turn}'s`);
          continue;
        }
        lines.push(`  system prompt${from} (${headerLine(header)}):`, ...indent(visible(header.system), '  │ '));
        lastDigest = { digest: header.digest, turn: turn.number };
      }
    }
    for (const call of turn.toolCalls) {
      lines.push(`  • ${visible(call.name)} ${visible(clip(JSON.stringify(call.input) ?? '', 100))} → ${call.state}${call.error ? `: ${visible(call.error)}` : ''}`);
      if (call.output !== null && call.output !== '') {
        const output = call.output.trimEnd().split('\n');
        lines.push(...output.slice(0, OUTPUT_LINES).map((line) => `      ${visible(clip(line, 160))}`));
        if (output.length > OUTPUT_LINES) lines.push(`      … ${output.length - OUTPUT_LINES} more line${output.length - OUTPUT_LINES === 1 ? '' : 's'}`);
      }
    }
    for (const approval of turn.approvals) {
      lines.push(`  ? ${visible(approval.toolName)} ${visible(clip(approval.subject, 100))} — ${approval.decision}${approval.decidedBy ? ` by ${visible(approval.decidedBy)}` : ''}${approval.note ? `: ${visible(approval.note)}` : ''}`);
    }
    if (turn.text !== '') lines.push(...indent(visible(turn.text), '  '));
    if (turn.error && turn.state === 'failed') lines.push(`  error: ${visible(turn.error)}`);
    if (turn.changes) {
      const { files, filesChanged, additions, deletions, filesOmitted } = turn.changes;
      const listed = files.map((file) => `${visible(file.path)} (${file.status})`).join(', ');
      lines.push(`  changed ${filesChanged} file${filesChanged === 1 ? '' : 's'} (+${additions} -${deletions}): ${listed}${filesOmitted > 0 ? ` and ${filesOmitted} more` : ''}${turn.undone ? ' — undone' : ''}`);
    }
  }
  return lines;
}

const contextLine = (context: NonNullable<NonNullable<TurnRecord['request']>['context']>): string =>
  [
    `agent ${context.agent}`,
    context.workspace ?? 'no workspace',
    context.platform,
    context.date,
    context.git ? `git ${context.git.branch ?? '(detached)'}${context.git.status.trim() === '' ? ', clean' : `, ${context.git.status.trim().split('\n').length} changed`}` : 'not a git repository',
    context.instructions.length === 0 ? 'no instructions files' : `instructions: ${context.instructions.map((file) => file.path).join(', ')}`,
  ]
    .map(visible)
    .join(' · ');

const headerLine = (header: TurnHeader): string => `${header.provider}${header.model ? `/${header.model}` : ''}, ${header.tools.length} tools: ${header.tools.map((tool) => tool.name).join(', ')}`;

const indent = (text: string, prefix: string): string[] => text.split('\n').map((line) => `${prefix}${line}`);
