import { InProcessHub } from '../../bus/index.ts';
import { TurnloomClient, type TurnEvent } from '../../client/index.ts';
import type { PendingApproval } from '../../protocol/index.ts';
import type { CheckpointDiff, FileChange, FileChanges, PermissionMode, PermissionRule, ProviderAdapter, ProviderChoice, ThreadView, TurnView, Usage } from '../../domain/index.ts';
import { TurnloomError } from '../../domain/index.ts';
import type { LmdbStore } from '../../adapters/lmdbStore.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import type { TurnloomConfig } from '../../services/config/index.ts';
import type { WorkerOptions } from '../../services/worker/worker.ts';
import { openStore } from '../openStore.ts';
import { tempFolder } from '../tempFolder.ts';
import type { WorkspaceSetup } from '../workspaceSetup.ts';
import { type ApprovalPolicy, type LineSource, answerApproval, lineSource } from './approvalAnswers.ts';
import { visible } from '../terminalText.ts';
import { TerminalView, type TerminalViewOptions } from './terminalView.ts';
import { TurnProgress } from './turnProgress.ts';
import { configuredWorker } from '../workerSetup.ts';
import { latestThread } from '../latestThread.ts';

export interface RunRequest {
  prompt: string;
  workspace: WorkspaceSetup;
  /** The model's context window in tokens, instead of the known one (`null`: the known one). */
  contextWindow?: number | null;
  /** How the worker compacts (`contextWindow` above wins over this one's). */
  compaction?: NonNullable<WorkerOptions['loop']>['compaction'];
  /** What a new thread starts with besides `mode`: its permission rules and whether it compacts (default: none, auto). */
  threadDefaults?: { rules?: PermissionRule[]; compaction?: 'auto' | 'off' };
  /**
   * The configuration files' content, for what this run does not use yet
   * (agents, MCP servers): whoever wires them finds them here.
   */
  config?: TurnloomConfig;
  /** The agent its turns run as (default: the thread's, else the configuration's, else build). */
  agent?: string;
  /** Told one line per MCP server the configuration names: its tools, or why it did not start. */
  onNote?: (line: string) => void;
  /** Where the thread is kept; `null`: a temporary folder, removed after the run. */
  dataDir: string | null;
  /** Continue this thread (it must be in `dataDir`), or `last`: the thread of `dataDir` that ran last. */
  threadId: string | { last: true } | null;
  providers: Record<string, ProviderAdapter>;
  provider: ProviderChoice;
  policy: ApprovalPolicy;
  mode: PermissionMode | undefined;
  /** Where the run is shown, and how (see `TerminalViewOptions`); `null` for `--json` (only the report is printed). */
  view: ({ out: NodeJS.WritableStream } & TerminalViewOptions) | null;
  /** Where approvals are asked (and lines typed); also where notes go. */
  input: NodeJS.ReadableStream;
  prompts: NodeJS.WritableStream;
  /** Seconds after which the turn is interrupted and the run ends (`RunReport.timedOut`); none: no limit. */
  timeoutSeconds?: number;
  /** Called once the engine and worker are up (the data folder is open), before the turn starts. */
  onStarted?: () => void;
  /** Called with the thread as soon as it is known (created or found), so a run stopped at any moment can be continued, and the permission mode in force on it. */
  onThread?: (threadId: string, mode: PermissionMode) => void;
  /**
   * Told each of the turn's events as it happens (`run --json`), with the
   * thread it is of: the run's, or a sub-agent's for the approvals this run
   * answers for it.
   */
  onEvent?: (threadId: string, event: TurnEvent) => void;
}

export interface RunReport {
  threadId: string;
  /** The thread's title once the run's side work is done: generated after its first completed turn. */
  title: string;
  turnId: string;
  status: string;
  text: string;
  toolCalls: Array<{ name: string; input: unknown; state: string; output: string | null; error: string | null }>;
  approvals: Array<{ toolName: string; kind: string; subject: string; state: string; decidedBy: string | null; note: string | null }>;
  /**
   * The turn's changes, when it made any in a workspace with checkpoints: the
   * totals of every file, the first files (`filesOmitted` more are not
   * listed), and `patch`, the unified diff (cut past 200,000 characters).
   */
  checkpoint:
    | ({ id: string; files: Array<Pick<FileChange, 'path' | 'status' | 'additions' | 'deletions'>>; patch: string; summary: string | null } & Omit<FileChanges, 'files'>)
    | null;
  usage: Usage;
  /** How many events the thread's log holds after the run. */
  events: number;
  /** Why the turn failed, when it did: the provider's or the tool's own words, with what to do about it when that is known. */
  failure: RunFailure | null;
  /** Whether `timeoutSeconds` ran out (the turn was interrupted for it). */
  timedOut: boolean;
}

/** A failed turn's reason, from the error activity its worker recorded. */
export interface RunFailure {
  /** `authentication`, `connection`, `rateLimit`…, or `error` when the failure was not the provider's. */
  kind: string;
  message: string;
  /** The provider's HTTP status, when it answered. */
  status: number | null;
  /** The provider the turn ran on. */
  provider: string;
}

const settledStates = ['completed', 'failed', 'interrupted'];

/**
 * One turn on an embedded engine and worker, in this process: the in-process
 * bus, LMDB (kept in `dataDir`, or thrown away), the workspace's tools and
 * checkpoints. The first Ctrl-C interrupts the turn (it settles cleanly); a
 * second one leaves at once.
 */
export async function runEmbedded(request: RunRequest): Promise<RunReport> {
  const temporary = request.dataDir === null ? tempFolder('turnloom-run-') : null;
  const store = openStore(request.dataDir ?? temporary!.path);
  const hub = new InProcessHub();
  const { workspace } = request;
  const configured = await configuredWorker(request.config ?? {}, workspace);
  for (const note of configured.notes) request.onNote?.(note.trim());
  // Only this run's thread and its sub-agents' are taken: a turn another stopped run left open on another thread is for that thread's run, and waiting on it would hold this one's exit.
  let ours: string | null = null;
  const drives = (threadId: string): boolean => {
    for (let id: string | undefined = threadId; id !== undefined; id = server.engine.summary(id)?.parentThreadId ?? undefined) if (id === ours) return true;
    return false;
  };
  const server = await startTurnloomServer({
    bus: hub.connect(),
    store,
    providers: request.providers,
    defaultProvider: request.provider,
    localWorker: { takes: (threadId) => ours !== null && drives(threadId), workspace: workspace.workspace, ...configured.options, checkpoints: workspace.checkpoints },
    runner: { compaction: { ...request.compaction, ...(request.contextWindow ? { contextWindow: request.contextWindow } : {}) } },
  }).catch(async (error: unknown) => {
    await store.close().catch(() => undefined);
    await configured.close();
    temporary?.remove();
    throw error;
  });
  const client = new TurnloomClient(hub.connect());
  request.onStarted?.();
  let lines = null as LineSource | null;
  try {
    const threadId = await threadToRun(request, store, server, client);
    ours = threadId;
    const watch = await client.watchThread(threadId, { via: 'subjects' });
    request.onThread?.(threadId, request.mode ?? watch.context.view!.permissions.mode);
    const view = request.view ? new TerminalView(request.view.out, request.view) : null;
    const say = (line: string) => (view ? view.line(visible(line)) : request.prompts.write(`${visible(line)}\n`));
    const offLive = watch.onLive((delta) => {
      if (delta.kind === 'toolOutput') view?.toolOutput(delta.partId, delta.text);
    });
    const { turnId: firstTurnId } = await client.call('turn.start', {
      threadId,
      input: { text: request.prompt },
      provider: request.provider,
      ...(request.mode && request.threadId ? { mode: request.mode } : {}),
      ...(request.agent ? { agent: request.agent } : {}),
    });
    let turnId = firstTurnId;
    // A turn a stopped run left open (resumed by this run's worker) goes first; ours is queued behind it.
    const openTurn = () => watch.context.view?.openTurnId ?? null;

    // A person at a terminal may type while the turn runs: steered into it, or queued after it with /queue.
    const followUps: string[] = [];
    const sends = new Set<Promise<void>>();
    const prompt = (line: string) => {
      const queued = line.trim().startsWith('/queue ');
      const text = queued ? line.trim().slice('/queue '.length).trim() : line.trim();
      if (text === '') return;
      const sent = client
        .call('turn.start', { threadId, input: { text }, provider: request.provider, whileRunning: queued ? 'queue' : 'steer', ...(request.agent ? { agent: request.agent } : {}) })
        .then((answer) => {
          // Typed just as the turn settled, it starts a turn of its own: followed like a queued one.
          if (answer.inbox !== 'steered') followUps.push(answer.turnId);
          say(answer.inbox === 'steered' ? `↳ steered into this turn: ${text}` : `⧗ queued: ${text} (runs after this turn)`);
        })
        .catch((error: unknown) => {
          say(`could not send that: ${(error as Error).message}`);
        })
        .finally(() => sends.delete(sent));
      sends.add(sent);
    };
    const typing = view !== null && request.view!.tty && (request.input as { isTTY?: boolean }).isTTY === true;

    let interrupts = 0;
    let stopReason = 'interrupted with Ctrl-C';
    // Once stopped, the run does not wait for side work after its turn settled: it ends with that turn's result.
    let stopped = () => {};
    const stopping = new Promise<void>((resolve) => (stopped = resolve));
    const stopOpenTurn = () => {
      const open = openTurn() ?? turnId;
      client.call('turn.interrupt', { threadId, turnId: open, reason: stopReason }).catch((error: unknown) => {
        // Settled before the interrupt reached it: nothing is left to stop, the turn's own result is the run's.
        if (!settledStates.includes(watch.context.view?.turns[open]?.state ?? '')) say(`could not interrupt: ${(error as Error).message}`);
      });
    };
    const interrupt = (signal: NodeJS.Signals = 'SIGINT') => {
      interrupts += 1;
      if (interrupts > 1) {
        // Leaving at once skips every finally: the throwaway data folder goes now or never.
        temporary?.remove();
        process.exit(130);
      }
      stopReason = signal === 'SIGINT' ? 'interrupted with Ctrl-C' : `the run got ${signal}`;
      say(`interrupting… (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to quit at once)`);
      stopped();
      stopOpenTurn();
    };
    const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const signal of stopSignals) process.on(signal, interrupt);
    // A CI job must never hang on a run: past the limit the turn is interrupted, and past the grace the run leaves at once.
    let timedOut = false;
    const { timeoutSeconds } = request;
    const limit =
      timeoutSeconds === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            interrupts += 1;
            stopReason = `timed out after ${timeoutSeconds} s`;
            stopped();
            stopOpenTurn();
            setTimeout(() => {
              temporary?.remove();
              request.prompts.write(`turnloom: timed out after ${timeoutSeconds} s; the turn did not stop within ${TIMEOUT_GRACE_MS / 1000} s, so the run left at once\n`);
              process.exit(124);
            }, TIMEOUT_GRACE_MS).unref();
          }, timeoutSeconds * 1000);
    const readLines = () => (lines ??= lineSource(request.input, request.prompts, interrupt, typing ? prompt : undefined, typing ? (view ?? undefined) : undefined));
    if (typing) {
      readLines();
      say('  (type to steer this turn as it runs; start a line with /queue to run it after)');
    }
    try {
      const answerOne = async (approval: PendingApproval) => {
        // Once interrupted, the approvals are cancelled with the turn: nothing is left to answer or say.
        if (interrupts > 0) return;
        const answer = await answerApproval(request.policy, approval, readLines, (line) => {
          if (interrupts === 0) say(line);
        });
        if (interrupts > 0) return;
        await client.call('approval.respond', { threadId: approval.threadId, approvalId: approval.id, decision: answer.decision, note: answer.note });
        // A sub-agent's approval is not in this turn's log: what became of it is told from here.
        if (approval.parentThreadId !== undefined) {
          const { id, partId, toolCallId, turnId: childTurnId, threadId: childThreadId } = approval;
          const decision = answer.decision === 'deny' ? 'denied' : 'approved';
          request.onEvent?.(childThreadId, { type: 'approval.answered', turnId: childTurnId, approvalId: id, partId, callId: toolCallId, decision, by: null, note: answer.note });
        }
      };
      /** Follows whatever runs before `target` (a turn left open by a stopped run), then `target` itself. */
      const followThrough = async (target: string) => {
        for (let open = openTurn(); open !== null && open !== target; open = openTurn()) {
          say(`turn ${open} of this thread, left open by a run that stopped, goes on first`);
          await follow(client, watch, open, view, answerOne, request.onEvent);
          // Stopped while it ran: ours is stopped too rather than started.
          if (interrupts > 0 && openTurn() === target) stopOpenTurn();
        }
        await follow(client, watch, target, view, answerOne, request.onEvent);
      };
      await followThrough(turnId);
      // Queued prompts run one after another once this turn settled, unless it was interrupted.
      for (;;) {
        await Promise.all([...sends]);
        const next = followUps.shift();
        if (next === undefined || interrupts > 0) break;
        turnId = next;
        await followThrough(turnId);
      }
      view?.close();
      // The title and the turn's summary come after it settled, from the worker's side work: waited for, briefly.
      await Promise.race([server.worker?.idle(SIDE_WORK_WAIT_MS), stopping]);
      await watch.reach(server.engine.summary(threadId)!.seq);
      const report = { ...reportOf(watch.context.view!, turnId), timedOut };
      offLive();
      watch.close();
      return report;
    } finally {
      clearTimeout(limit);
      for (const signal of stopSignals) process.off(signal, interrupt);
    }
  } finally {
    lines?.close();
    await client.bus.close().catch(() => undefined);
    await server.stop();
    await configured.close();
    temporary?.remove();
  }
}

/**
 * How long a run waits, once its turns settled, for their side work (the
 * thread's title, a turn's summary): a fast model's lines make it into the
 * summary printed, a slow one does not hold the exit (the thread keeps the
 * title it started with, the turn goes without a summary, and the calls
 * still running are aborted as the worker stops).
 */
const SIDE_WORK_WAIT_MS = 1_500;

/** How long a run that timed out waits for its interrupted turn to settle before it leaves at once. */
const TIMEOUT_GRACE_MS = 10_000;

/** How often the approvals of a turn's sub-agents are looked for while one runs. */
const CHILD_APPROVALS_MS = 250;

/**
 * Shows the turn as its view changes and answers its approvals one by one,
 * until it settles; while a sub-agent runs, its approvals (listed with the
 * thread's) are answered here too, so a child never waits for a person who
 * cannot see it.
 */
function follow(
  client: TurnloomClient,
  watch: Awaited<ReturnType<TurnloomClient['watchThread']>>,
  turnId: string,
  view: TerminalView | null,
  answer: (approval: PendingApproval) => Promise<void>,
  onEvent?: (threadId: string, event: TurnEvent) => void,
): Promise<void> {
  const progress = new TurnProgress(turnId, watch.threadId, onEvent && ((event) => onEvent(watch.threadId, event)));
  return new Promise<void>((resolve, reject) => {
    let answering = Promise.resolve();
    const asked = new Set<string>();
    const ask = (approval: PendingApproval) => {
      view?.show({ kind: 'approval', approval });
      answering = answering.then(() => answer(approval)).catch(fail);
    };
    const check = () => {
      const turn = watch.context.view?.turns[turnId];
      if (!turn) return;
      for (const item of progress.next(turn)) {
        if (item.kind === 'approval') ask({ ...item.approval, threadId: watch.threadId, turnId });
        else view?.show(item);
      }
      if (settledStates.includes(turn.state)) finish(resolve);
      if (watch.context.status === 'failed') fail(new TurnloomError('unavailable', `lost the thread: ${watch.context.error}`));
    };
    const childApprovals = setInterval(() => {
      const turn = watch.context.view?.turns[turnId];
      if (!turn?.messages[1].parts.some((part) => part.task?.status === 'running')) return;
      client
        .call('approval.list', { threadId: watch.threadId })
        .then(({ approvals }) => {
          for (const approval of approvals) {
            if (approval.parentThreadId === undefined || asked.has(approval.id)) continue;
            asked.add(approval.id);
            onEvent?.(approval.threadId, { type: 'approval.asked', turnId: approval.turnId, approval });
            ask(approval);
          }
        })
        .catch(fail);
    }, CHILD_APPROVALS_MS);
    const subscription = watch.store.subscribe(check);
    const offLive = watch.onLive((delta) => {
      for (const item of progress.live(delta)) view?.show(item);
    });
    function finish(done: () => void) {
      clearInterval(childApprovals);
      subscription.unsubscribe();
      offLive();
      done();
    }
    function fail(error: unknown) {
      finish(() => reject(error));
    }
    check();
  });
}

function checkpointReport(id: string, diff: CheckpointDiff, summary: string | null): NonNullable<RunReport['checkpoint']> {
  const { filesChanged, additions, deletions, filesOmitted, patch } = diff;
  const files = diff.files.map(({ path, status, additions, deletions }) => ({ path, status, additions, deletions }));
  return { id, files, filesChanged, additions, deletions, filesOmitted, patch, summary };
}

/** The thread this run continues (checked to be in the data folder), or a new one. */
async function threadToRun(request: RunRequest, store: LmdbStore, server: TurnloomServer, client: TurnloomClient): Promise<string> {
  const wanted = request.threadId;
  if (wanted === null) {
    const { workspace, mode, prompt, threadDefaults } = request;
    return (
      await client.call('thread.create', {
        title: prompt.slice(0, 200),
        workspace: workspace.workspace,
        ...(mode ? { mode } : {}),
        ...(threadDefaults?.rules?.length ? { rules: threadDefaults.rules } : {}),
        ...(threadDefaults?.compaction ? { compaction: threadDefaults.compaction } : {}),
      })
    ).threadId;
  }
  if (typeof wanted === 'string') {
    if (!server.engine.summary(wanted)) throw new TurnloomError('not_found', `no thread ${wanted} in ${request.dataDir}: pass the --data folder it was run with`, { threadId: wanted });
    return wanted;
  }
  const last = latestThread([...store.threadsNewestFirst(null)].map(({ summary }) => summary));
  if (last === null) throw new TurnloomError('not_found', `no thread in ${request.dataDir} to continue: run without --continue to start one`, { dataDir: request.dataDir });
  return last;
}

/** Why the turn failed, from the last error its worker recorded (or the turn's own error). */
function failureOf(turn: TurnView): RunFailure | null {
  if (turn.state !== 'failed') return null;
  const activity = turn.activities.findLast((candidate) => candidate.kind === 'error');
  const info = activity?.data.error as { kind?: unknown; message?: unknown; status?: unknown } | undefined;
  if (info && typeof info.kind === 'string' && typeof info.message === 'string') {
    return { kind: info.kind, message: info.message, status: typeof info.status === 'number' ? info.status : null, provider: turn.provider.name };
  }
  // Not the provider's: the error's own code says what kind (printing "error: error: …" said nothing).
  const code = activity?.data.code;
  return { kind: typeof code === 'string' ? code : 'internal', message: activity?.message ?? turn.error ?? 'the turn failed', status: null, provider: turn.provider.name };
}

function reportOf(thread: ThreadView, turnId: string): Omit<RunReport, 'timedOut'> {
  const turn = thread.turns[turnId]!;
  const parts = turn.messages[1].parts;
  return {
    threadId: thread.id,
    title: thread.title,
    turnId,
    status: turn.state,
    text: parts.filter((part) => part.kind === 'text').map((part) => part.text).join('\n\n'),
    toolCalls: parts.flatMap((part) => (part.tool ? [{ name: part.tool.name, input: part.tool.input, state: part.state, output: part.tool.output, error: part.error }] : [])),
    approvals: turn.approvals.map(({ toolName, kind, subject, state, decidedBy, note }) => ({ toolName, kind, subject, state, decidedBy, note })),
    checkpoint: turn.checkpoint?.diff ? checkpointReport(turn.id, turn.checkpoint.diff, turn.summary) : null,
    usage: turn.usage,
    events: thread.seq,
    failure: failureOf(turn),
  };
}
