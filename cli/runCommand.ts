import { type PermissionMode, permissionModes } from '../domain/index.ts';
import { UsageError, integerOption, parseOptions } from './cliErrors.ts';
import { failureHint } from './run/failureHint.ts';
import { paint, wantsColour } from './colours.ts';
import { printStyled } from './redact.ts';
import { changesOf, summaryLines } from './run/runSummary.ts';
import { terminalJson, visible } from './terminalText.ts';
import { providersFromEnvironment } from './providerRegistry.ts';
import { LazyProvider } from '../adapters/providers/lazyProvider.ts';
import { commandConfig, compactionOptions } from './commandConfig.ts';
import type { ApprovalPolicy } from './run/approvalAnswers.ts';
import { type RunReport, runEmbedded } from './run/embeddedRun.ts';
import { agentProvider, checkAgent } from './workerSetup.ts';
import { dataFolderFor, workspaceSetup } from './workspaceSetup.ts';
import { runUsage } from './commandUsage.ts';


const policies: readonly ApprovalPolicy[] = ['ask', 'auto', 'deny'];

export async function runCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions('run', {
    args,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      cwd: { type: 'string', default: '.' },
      provider: { type: 'string' },
      model: { type: 'string' },
      approve: { type: 'string' },
      mode: { type: 'string' },
      agent: { type: 'string' },
      data: { type: 'string' },
      thread: { type: 'string' },
      continue: { type: 'boolean', short: 'c', default: false },
      script: { type: 'string' },
      'context-window': { type: 'string' },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', default: false },
      'no-diff': { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(runUsage);
    return 0;
  }
  const prompt = positionals.join(' ').trim();
  if (prompt === '') throw new UsageError('run: say what to do, e.g. turnloom run "fix the failing test"; see turnloom run --help');
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
  const policy = (values.approve ?? (tty ? 'ask' : 'deny')) as ApprovalPolicy;
  if (!policies.includes(policy)) throw new UsageError(`run: --approve must be ask, auto or deny, not "${values.approve}"`);
  if (values.mode !== undefined && !permissionModes.includes(values.mode as PermissionMode)) {
    throw new UsageError(`run: --mode must be one of ${permissionModes.join(', ')}, not "${values.mode}"`);
  }
  if (values.thread !== undefined && values.continue) throw new UsageError('run: pass --continue (the thread that ran last) or --thread ID, not both');
  const contextWindow = integerOption('run', 'context-window', values['context-window'], { min: 1_000, unit: 'tokens' }) ?? null;

  const dataDir = await dataFolderFor(values.cwd!, values.data);
  const workspace = await workspaceSetup('run', '--cwd', values.cwd!, dataDir);
  const { config, files } = commandConfig(workspace.workspace);
  const setup = await providersFromEnvironment(process.env, values.script, { config, files, flags: { command: 'run', provider: values.provider, model: values.model } });
  const agent = values.agent === undefined ? undefined : checkAgent('run', config, values.agent);
  const { name, model } = agent && values.provider === undefined && values.model === undefined ? agentProvider(config, agent, setup) : setup.defaultProvider;
  // The turn's first model call is a few git calls and the engine's start away: its SDK loads meanwhile.
  const chosen = setup.providers[name];
  if (chosen instanceof LazyProvider) chosen.preload();
  const notes = process.stderr;
  const colour = wantsColour(process.stdout);
  if (Object.keys(setup.providers).length === 1) notes.write('turnloom: no OPENAI_API_KEY or ANTHROPIC_API_KEY is set, so the scripted provider answers\n');
  if (!values.json) notes.write(`turnloom run — ${name}${model ? ` (${model})` : ''}, ${workspace.summary}${agent ? `, agent: ${agent}` : ''}${files.length > 0 ? `, config: ${files.join(', ')}` : ''}\n`);
  if (workspace.isolationWarning) notes.write(`turnloom: ${workspace.isolationWarning}\n`);

  const report = await runEmbedded({
    prompt,
    workspace,
    dataDir,
    threadId: values.continue ? { last: true } : (values.thread ?? null),
    providers: setup.providers,
    provider: { name, model },
    policy,
    // A new thread takes the configured mode; a thread continued keeps its own unless --mode says otherwise.
    mode: (values.mode as PermissionMode | undefined) ?? (values.thread === undefined && !values.continue ? config.permissions?.mode : undefined),
    contextWindow,
    compaction: compactionOptions(config, contextWindow, name),
    threadDefaults: { rules: config.permissions?.rules ?? [], compaction: config.compaction?.auto === false ? 'off' : 'auto' },
    config,
    ...(agent ? { agent } : {}),
    onNote: (line) => notes.write(`turnloom: ${line}\n`),
    view: values.json ? null : { out: process.stdout, tty: process.stdout.isTTY === true, colour, verbose: values.verbose! },
    input: process.stdin,
    prompts: values.json ? process.stderr : process.stdout,
    // Named at once, so a run stopped at any moment (kill -9 included) can be continued.
    onThread: (threadId, mode) => notes.write(`thread ${threadId} · mode ${mode}${mode === 'full' ? ' (nothing asks)' : `, approvals: ${policy}`} · data ${dataDir}\n`),
  });
  if (values.json) console.log(terminalJson(jsonReport(report)));
  else {
    printStyled(summaryLines(report, paint(colour), { diff: !values['no-diff'] }).join('\n'));
    const where = `${values.cwd === '.' ? '' : ` --cwd ${shellQuote(values.cwd!)}`}${values.data === undefined ? '' : ` --data ${shellQuote(values.data)}`}`;
    printStyled(`\ncontinue this thread: ${paint(colour).strong(visible(`turnloom run --thread ${report.threadId}${where} "…"`))}`);
  }
  return report.status === 'completed' ? 0 : report.status === 'interrupted' ? 130 : 1;
}

const jsonReport = ({ threadId, title, turnId, status, failure, text, toolCalls, approvals, checkpoint, usage }: RunReport) => ({
  threadId,
  title,
  turnId,
  status,
  error: failure && { ...failure, hint: failureHint(failure) },
  text,
  toolCalls,
  approvals,
  checkpoint: checkpoint && { id: checkpoint.id, ...changesOf(checkpoint), summary: checkpoint.summary },
  usage,
});

/** A word as a POSIX shell reads it back: quoted only when it has to be. */
const shellQuote = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`);

