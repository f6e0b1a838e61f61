import { type PermissionMode, agentMode, permissionModes } from '../domain/index.ts';
import { UsageError, integerOption, parseOptions, positiveOption } from './cliErrors.ts';
import { failureHint } from './run/failureHint.ts';
import { paint, wantsColour } from './colours.ts';
import { printStyled } from './redact.ts';
import { changesOf, summaryLines } from './run/runSummary.ts';
import { visible } from './terminalText.ts';
import { JsonLines } from './run/jsonLines.ts';
import { providersFromEnvironment } from './providerRegistry.ts';
import { LazyProvider } from '../adapters/providers/lazyProvider.ts';
import { commandConfig, compactionOptions } from './commandConfig.ts';
import { terminalQuestion, withProjectServers } from './mcpConsent.ts';
import type { ApprovalPolicy } from './run/approvalAnswers.ts';
import { type RunReport, runEmbedded } from './run/embeddedRun.ts';
import type { TurnEvent } from '../client/index.ts';
import { agentProvider, checkAgent, configuredAgents } from './workerSetup.ts';
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
      timeout: { type: 'string' },
    },
  });
  if (values.help) {
    console.log(runUsage);
    return 0;
  }
  const timeoutSeconds = positiveOption('run', 'timeout', values.timeout);
  const fromStdin = positionals.length === 1 && positionals[0] === '-';
  const prompt = fromStdin ? (await readAll(process.stdin)).trim() : positionals.join(' ').trim();
  if (prompt === '' && fromStdin) throw new UsageError('run: the prompt read from standard input (run -) is empty: pipe it in, e.g. echo "fix the failing test" | turnloom run -');
  if (prompt === '') throw new UsageError('run: say what to do, e.g. turnloom run "fix the failing test"; see turnloom run --help');
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
  const policy = (values.approve ?? (tty ? 'ask' : 'deny')) as ApprovalPolicy;
  if (!policies.includes(policy)) throw new UsageError(`run: --approve must be ask, auto or deny, not "${values.approve}"`);
  if (values.mode !== undefined && !permissionModes.includes(values.mode as PermissionMode)) {
    throw new UsageError(`run: --mode must be one of ${permissionModes.join(', ')}, not "${values.mode}"`);
  }
  if (values.thread !== undefined && values.continue) throw new UsageError('run: pass --continue (the thread that ran last) or --thread ID, not both');
  const contextWindow = integerOption('run', 'context-window', values['context-window'], { min: 1_000, unit: 'tokens' }) ?? null;

  const { path: dataDir, location } = await dataFolderFor(values.cwd!, values.data);
  const workspace = await workspaceSetup('run', '--cwd', values.cwd!, dataDir, [], location);
  const loaded = commandConfig(workspace.workspace);
  const { files } = loaded;
  const { config, notes: serverNotes } = await withProjectServers(loaded, terminalQuestion());
  for (const line of serverNotes) process.stderr.write(`turnloom: ${line}\n`);
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

  // --json: JSON Lines on stdout as the turn runs (docs/run-json.md); everything else goes to stderr.
  const json = values.json ? new JsonLines(process.stdout) : null;
  const resumed = values.continue || values.thread !== undefined;
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
    ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
    compaction: compactionOptions(config, contextWindow, name),
    threadDefaults: { rules: config.permissions?.rules ?? [], compaction: config.compaction?.auto === false ? 'off' : 'auto' },
    config,
    ...(agent ? { agent } : {}),
    onNote: (line) => notes.write(`turnloom: ${line}\n`),
    view: values.json ? null : { out: process.stdout, tty: process.stdout.isTTY === true, colour, verbose: values.verbose! },
    input: process.stdin,
    prompts: values.json ? process.stderr : process.stdout,
    // Named at once, so a run stopped at any moment (kill -9 included) can be continued.
    // The mode the turn runs in: an agent narrower than the thread (plan is read-only) is what counts.
    onThread: (threadId, threadMode) => {
      const mode = agent ? agentMode(threadMode, configuredAgents(config)[agent]!) : threadMode;
      notes.write(`thread ${threadId} · mode ${mode}${agent && mode !== threadMode ? ` (agent ${agent})` : ''}${mode === 'full' ? ' (nothing asks)' : `, approvals: ${policy}`} · data ${dataDir}\n`);
      json?.thread(threadId, mode, resumed);
    },
    ...(json ? { onEvent: (threadId: string, event: TurnEvent) => json.event(threadId, event) } : {}),
  }).catch((error: unknown) => {
    json?.error(error);
    throw error;
  });
  if (json) json.summary(jsonReport(report));
  else {
    printStyled(summaryLines(report, paint(colour), { diff: !values['no-diff'] }).join('\n'));
    const where = `${values.cwd === '.' ? '' : ` --cwd ${shellQuote(values.cwd!)}`}${values.data === undefined ? '' : ` --data ${shellQuote(values.data)}`}`;
    printStyled(`\ncontinue this thread: ${paint(colour).strong(visible(`turnloom run --thread ${report.threadId}${where} "…"`))}`);
  }
  if (report.timedOut) {
    notes.write(`turnloom: timed out after ${timeoutSeconds} s; the turn was interrupted\n`);
    return 124;
  }
  return report.status === 'completed' ? 0 : report.status === 'interrupted' ? 130 : 1;
}

/** Everything a stream gives until its end: the prompt of `run -`. */
async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  stream.setEncoding('utf8');
  let text = '';
  for await (const chunk of stream) text += chunk as string;
  return text;
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

