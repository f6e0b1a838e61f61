import { resolve as resolvePath } from 'node:path';
import { previewOf } from './callPreview.ts';
import { LiveToolOutput } from './liveToolOutput.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ApprovalView,
  type DomainEvent,
  type PartView,
  type PermissionMode,
  type ProviderAdapter,
  ProviderError,
  type ProviderErrorInfo,
  type ProviderRequest,
  type RequestContext,
  type ToolCall,
  type ToolExecutor,
  type ToolKind,
  type TurnView,
  TurnloomError,
  type WorkspaceCheckpoints,
  TASK_TOOL,
  agentOffers,
  decidePermission,
  errorFields,
  waitingInput,
} from '../../domain/index.ts';
import {
  type StepAnswer,
  approvalIdFor,
  closeFailedStep,
  closeStep,
  completeTurn,
  cutToolOutput,
  endWithoutTools,
  failureActivity,
  retryActivity,
  toolOutcomeEvent,
} from '../engine/turnRules.ts';
import { isResumableStep } from '../engine/settleTurn.ts';
import { MAX_UNCAPTURED } from '../dispatch/workerProtocol.ts';
import { agentNamed, agentPermissions, agentTools, askedAgent, turnAgent } from './turnAgent.ts';
import { retryDelay } from '../runtime/retryPolicy.ts';
import { StepIngestion, omittedInput } from '../runtime/stepIngestion.ts';
import type { Outbox } from './outbox.ts';
import { diffToRecord } from './recordedChanges.ts';
import { reachWritten } from './reachWritten.ts';
import { whenFold } from './foldWait.ts';
import { prepareRequest, retryAfterError, turnStopping } from './stepHooks.ts';
import { turnTools } from './turnTools.ts';
import { withTaskTool } from './taskTool.ts';
import type { StopReason, TurnWork } from './turnWork.ts';
export type { CheckpointSetting, StopReason, TurnLoopOptions, TurnWork } from './turnWork.ts';

class StepFailed extends Error {
  readonly info: ProviderErrorInfo;
  constructor(info: ProviderErrorInfo) {
    super(info.message);
    this.info = info;
  }
}

type Decision = 'granted' | 'denied' | 'expired' | 'cancelled';

const decisions: Record<string, Decision> = { approved: 'granted', denied: 'denied', expired: 'expired', cancelled: 'cancelled' };

/**
 * Runs a turn the worker holds: derives each model call from its fold of
 * the durable log, streams it through step ingestion, runs the tools in
 * order (behind approvals), and writes everything through its outbox, where
 * the engine's machines accept or refuse it. A resumed turn (its previous
 * worker was lost) continues with a new step. Every path ends the turn, or
 * leaves it to the engine: a lost lease writes nothing more.
 */
export async function runTurn(work: TurnWork): Promise<void> {
  try {
    await runTurnToEnd(work);
  } finally {
    await endTurnTools(work);
  }
}

async function runTurnToEnd(work: TurnWork): Promise<void> {
  const { turnId, outbox, signal, options } = work;
  const view = () => work.fold.context.view!;
  const turn = (): TurnView => view().turns[turnId]!;
  const settle = (outcome: Parameters<Outbox['settle']>[0]) => outbox.settle(outcome).catch((error: unknown) => ignoreSettled(error, work));

  if (turn().state.startsWith('interrupting')) {
    await settle({ kind: 'interrupted', cause: 'provider', reason: turn().interrupt?.reason ?? 'interrupted before it started' });
    return;
  }
  try {
    const adapter = work.adapter;
    if (!adapter) throw new TurnloomError('unavailable', `no provider "${turn().provider.name}" is configured on this worker`);
    // A turn nobody started yet starts in the same request as its first step (or whatever it writes first).
    if (turn().state === 'requested') outbox.hold(await openingEvents(work, adapter));
    const tools = withTaskTool(work, turnTools(adapter.tools, work.tools));
    let attempt = 1;
    let hookRetries = 0;
    if (isResumableStep(turn())) await resumeStep(work, tools);
    let answered = turn().steps.filter((step) => step.outcome === 'toolCalls').length;
    if (answered >= options.maxSteps) throw stepLimit(options.maxSteps);
    for (let step = turn().steps.length + 1; ; step++) {
      if (signal.aborted) throw signal.reason;
      await reachWritten(work);
      await claimWaitingInput(work, step);
      const context = await turnContext(work);
      const { request, digest, header } = await prepareRequest(work, adapter, agentTools(turnAgent(work).profile, tools.specs()), step, context.context);
      // What is new of the context and header, then the step, whose digest the engine checks against its own log before anything is sent;
      // they are written with the step's first answer (or alone within the window, if the model is slow to give one).
      const started: DomainEvent[] = [...context.record, ...header, { type: 'step.started', turnId, step, digest }];
      await outbox.check(started);
      work.tracing.stepStarted(step, request, turn().provider.name, turn().provider.model);
      const ingestion = new StepIngestion({ turnId, step, live: work.live, flushMs: options.flushMs, maxBufferChars: options.maxBufferChars });
      ingestion.lead(started);
      try {
        await streamStep(work, adapter, request, ingestion);
        work.tracing.modelEnded({ usage: ingestion.usage, stopReason: ingestion.stopReason, model: ingestion.model });
      } catch (error) {
        if (error instanceof StepFailed) work.tracing.modelEnded({ error: error.info });
        if (signal.aborted || !(error instanceof StepFailed)) throw error;
        await reachWritten(work);
        const attemptParts = turn().messages[1].parts.filter((part) => ingestion.partIds().includes(part.id));
        outbox.push(closeFailedStep(turnId, step, ingestion.usage, error.info, attemptParts));
        // A hook's retry (after compacting, say) is not a backoff retry; its own budget keeps a hook that always asks from looping.
        if (hookRetries < MAX_HOOK_RETRIES && (await retryAfterError(work, adapter, step, error.info, attempt))) {
          hookRetries += 1;
          continue;
        }
        const delay = retryDelay(error.info, attempt, options.retry, options.random);
        if (delay === null) throw error;
        outbox.push([retryActivity(turnId, error.info, attempt, options.retry.maxAttempts, delay)]);
        attempt += 1;
        await sleep(delay, undefined, { signal }).catch(() => Promise.reject(signal.reason));
        continue;
      }
      attempt = 1;
      const answer: StepAnswer = { step, usage: ingestion.usage, stopReason: ingestion.stopReason, rawReason: ingestion.rawReason, toolCalls: ingestion.toolCalls };
      if (answer.toolCalls.length === 0) {
        // The model stopped: listeners may steer input in, and while input waits the turn gets another step, which claims it.
        await turnStopping(work, adapter, step);
        if (waitingInput(turn()).length > 0) {
          await outbox.record([closeStep(turnId, answer, 'stop')]);
          if (++answered >= options.maxSteps) throw stepLimit(options.maxSteps);
          continue;
        }
        await captureAfter(work);
        await outbox.record(completeTurn(turnId, answer));
        return;
      }
      if (!(typeof options.runTools === 'function' ? options.runTools(step) : options.runTools)) {
        await captureAfter(work);
        await reachWritten(work);
        await outbox.record(endWithoutTools(turnId, answer, turn().messages[1].parts));
        return;
      }
      outbox.push([{ type: 'tools.started', turnId, step, toolCallIds: answer.toolCalls.map((call) => call.callId) }]);
      await runCalls(work, answer.toolCalls, tools, ingestion.callParts());
      // Durable with the next step's start (or whatever ends the turn): nothing acts on it before.
      outbox.push([closeStep(turnId, answer, 'toolCalls')]);
      if (++answered >= options.maxSteps) throw stepLimit(options.maxSteps);
    }
  } catch (error) {
    if (signal.aborted) {
      const stop = signal.reason as StopReason;
      // The engine took the turn away: it closed what was open, and anything more would be fenced.
      if (stop.kind === 'leaseLost') return;
      // An orderly stop leaves a turn that waits only for a person as a crash would: the question stays open, answerable after a restart, and whoever takes the turn next goes on from the answer.
      if (stop.kind === 'shutdown' && turn().approvals.some((approval) => approval.state === 'pending')) {
        await outbox.flushed();
        return;
      }
      if (stop.kind === 'engineAway') {
        await settle({ kind: 'failed', error: stop.reason });
        return;
      }
      await captureAfter(work).catch(() => undefined);
      await settle({ kind: 'interrupted', cause: 'provider', reason: turn().interrupt?.reason ?? stop.reason });
      return;
    }
    if (error instanceof TurnloomError && error.code === 'fenced') return;
    if (!(error instanceof StepFailed) && !(error instanceof TurnloomError)) work.log.error({ ...errorFields(error), threadId: work.threadId, turnId, stack: (error as Error).stack }, 'turn failed on an unexpected error');
    const failure = error instanceof StepFailed ? { provider: error.info } : (error as Error);
    await outbox.record([failureActivity(turnId, failure)]).catch(() => undefined);
    await captureAfter(work).catch(() => undefined);
    await settle({ kind: 'failed', error: error instanceof StepFailed ? `${error.info.kind}: ${error.info.message}` : (error as Error).message });
  }
}

/** Retries `requestError` hooks may ask for in one turn. */
const MAX_HOOK_RETRIES = 10;

const stepLimit = (maxSteps: number) => new TurnloomError('unavailable', `the turn reached its limit of ${maxSteps} model calls`);

/**
 * Input steered into the turn becomes part of the step about to start: the
 * claim is in the log before the step, so the request the engine derives
 * carries it too. A claim the machines refuse (the turn is being stopped)
 * changes nothing, and the input is kept for a follow-up turn.
 */
async function claimWaitingInput(work: TurnWork, step: number): Promise<void> {
  const waiting = waitingInput(work.fold.context.view!.turns[work.turnId]!);
  if (waiting.length === 0) return;
  await work.outbox.record([{ type: 'input.claimed', turnId: work.turnId, inputIds: waiting.map((item) => item.id), step }]);
  await reachWritten(work);
}

/** A turn nobody started yet: the provider session comes up if it must; what says so, and that the turn started, is for the caller to write. */
async function openingEvents(work: TurnWork, adapter: ProviderAdapter): Promise<DomainEvent[]> {
  const opening: DomainEvent[] = [];
  if (work.fold.context.view!.session.state === 'starting') {
    try {
      opening.push({ type: 'session.started', providerSessionId: (await adapter.startSession?.())?.providerSessionId ?? null });
    } catch (error) {
      await work.outbox.record([{ type: 'session.failed', reason: (error as Error).message }]);
      throw error;
    }
  }
  return [...opening, { type: 'turn.started', turnId: work.turnId }];
}


/** The snapshot the turn's prompt is built from: the one recorded, or (first step) one taken now, to be recorded with the step (the agent is checked first). */
async function turnContext(work: TurnWork): Promise<{ context: RequestContext; record: DomainEvent[] }> {
  const recorded = work.fold.context.view!.turnContext;
  if (recorded?.turnId === work.turnId) return { context: recorded.context, record: [] };
  const agent = askedAgent(work);
  agentNamed(work, agent);
  const context = await work.snapshot(agent);
  return { context, record: [{ type: 'request.context', turnId: work.turnId, context }] };
}

/** One model call: canonical events in, domain events written as they become due; a silent stream is a dropped connection. */
async function streamStep(work: TurnWork, adapter: ProviderAdapter, request: ProviderRequest, ingestion: StepIngestion): Promise<void> {
  const { signal, options, outbox } = work;
  const call = new AbortController();
  const onAbort = () => call.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  let idle = false;
  let timer = setTimeout(() => ((idle = true), call.abort()), options.idleTimeoutMs);
  // Deltas still buffered when the stream goes quiet are written by the clock, when the oldest of them is due
  // (a fixed tick would let one wait almost two windows).
  let due: NodeJS.Timeout | undefined;
  const write = () => {
    outbox.push(ingestion.take());
    if (due !== undefined) return;
    const wait = ingestion.nextDueInMs();
    if (wait !== null)
      due = setTimeout(() => {
        due = undefined;
        write();
      }, wait);
  };
  try {
    // The step itself waits in the ingestion from the start: the clock is set for it before the model says anything.
    write();
    for await (const event of abortable(adapter.stream(request, call.signal), call.signal)) {
      clearTimeout(timer);
      timer = setTimeout(() => ((idle = true), call.abort()), options.idleTimeoutMs);
      if (event.type === 'turn.failed') throw new StepFailed(event.error);
      ingestion.accept(event);
      write();
      if (outbox.failure) throw outbox.failure;
    }
    if (ingestion.stopReason === null) throw new StepFailed({ kind: 'connection', message: 'the stream ended before the answer completed', status: null, retryAfterMs: null });
    ingestion.closeUnfinished();
  } catch (error) {
    if (signal.aborted) throw error;
    if (idle) throw new StepFailed({ kind: 'connection', message: `no data for ${options.idleTimeoutMs} ms`, status: null, retryAfterMs: null });
    if (error instanceof ProviderError) throw new StepFailed(error.info);
    throw error;
  } finally {
    clearTimeout(timer);
    clearTimeout(due);
    signal.removeEventListener('abort', onAbort);
    // The answer goes with whatever the turn writes next (it acts on it only after a write it waits for);
    // on a failure or an interrupt, whatever arrived is still kept, as far as it can be.
    outbox.push(ingestion.drain());
  }
}

/**
 * The step a lost worker left with its answer complete: its tool calls that
 * never started run now, in order, behind the approvals the log has for
 * them (a decision made while nobody held the turn counts; a pending one is
 * waited for), and the step closes like any other. A call that was running
 * already has its unknown outcome and is never run again.
 */
async function resumeStep(work: TurnWork, tools: ToolExecutor): Promise<void> {
  const { turnId, outbox } = work;
  const turn = () => work.fold.context.view!.turns[turnId]!;
  const step = work.fold.context.view!.cursor.openStep!;
  const calls = turn()
    .messages[1].parts.filter((part) => part.step === step && part.tool !== null)
    .map((part): ToolCall => ({ callId: part.tool!.callId, name: part.tool!.name, input: part.tool!.input }));
  if (turn().state === 'running.responded') await outbox.record([{ type: 'tools.started', turnId, step, toolCallIds: calls.map((call) => call.callId) }]);
  await runCalls(work, calls, tools);
  const recorded = turn().steps.find((candidate) => candidate.step === step);
  await outbox.record([
    closeStep(turnId, { step, usage: recorded?.usage ?? null, stopReason: null, rawReason: recorded?.finishReason ?? null, toolCalls: calls }, 'toolCalls'),
  ]);
}

/**
 * A step's calls, in order; calls handed to child agents next to each other
 * run at the same time (each child is a turn of its own, on any worker), and
 * the call after them waits for all of them.
 */
async function runCalls(work: TurnWork, calls: readonly ToolCall[], tools: ToolExecutor, streamed: ReadonlyMap<string, string> = new Map()): Promise<void> {
  for (let at = 0; at < calls.length; ) {
    let end = at + 1;
    if (calls[at]!.name === TASK_TOOL) while (end < calls.length && calls[end]!.name === TASK_TOOL) end += 1;
    const ran = await Promise.allSettled(calls.slice(at, end).map((call) => runTool(work, call, tools, streamed.get(call.callId))));
    const failed = ran.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    if (work.signal.aborted) throw work.signal.reason;
    at = end;
  }
}

/** The part of the open turn that holds this tool call, as the fold has it now. */
const partOf = (work: TurnWork, call: ToolCall): PartView | undefined =>
  work.fold.context.view!.turns[work.turnId]!.messages[1].parts.find((candidate) => candidate.tool?.callId === call.callId);

/**
 * Where a call stands before it is decided. A call its step just streamed
 * (`streamedPartId`) is decided at once, so its start can go in the same
 * write as the answer (the machines still judge it there, and it runs only
 * once the fold says it is executing). Any other is read from the fold,
 * which may say there is nothing to decide: `null`.
 */
async function callToDecide(work: TurnWork, call: ToolCall, tools: ToolExecutor, streamedPartId: string | undefined): Promise<{ partId: string; asked: ApprovalView | undefined } | null> {
  const { turnId } = work;
  if (streamedPartId !== undefined) return { partId: streamedPartId, asked: undefined };
  await reachWritten(work);
  const part = partOf(work, call);
  const approvalId = part && approvalIdFor(part.id);
  const asked = part && work.fold.context.view!.turns[turnId]!.approvals.find((approval) => approval.id === approvalId);
  // Denied while nobody held the turn (a resumed step): the part is closed, and acting on the refusal is consuming it.
  if (asked?.state === 'denied') await work.outbox.record([{ type: 'approval.consumed', turnId, approvalId: asked.id }]);
  // Handed to a child before its worker was lost: its outcome comes from the child, so it is waited for, never run again.
  if (part?.state === 'running.tool.executing' && part.task) {
    await finishTool(work, call, tools, part.id, 'read');
    return null;
  }
  // Refused earlier (its diagnostic says why), or already run; a call asked about before a lost worker resumes here.
  if (!part || !(part.state === 'running.tool.inputReady' || part.state === 'running.tool.awaitingApproval')) return null;
  return { partId: part.id, asked };
}

async function runTool(work: TurnWork, call: ToolCall, tools: ToolExecutor, streamedPartId: string | undefined): Promise<void> {
  const { turnId } = work;
  const standing = await callToDecide(work, call, tools, streamedPartId);
  if (!standing) return;
  const { partId, asked } = standing;
  const approvalId = approvalIdFor(partId);
  const executing: DomainEvent = { type: 'tool.executing', turnId, partId, toolCallId: call.callId };
  const agent = turnAgent(work);
  const omitted = omittedInput(call.input);
  if (omitted !== null) {
    await work.outbox.record([{ type: 'part.failed', turnId, partId, error: omitted }]);
    return;
  }
  // The model may name a tool it was not offered: the agent's list is a limit, not a hint.
  if (!agentOffers(agent.profile, call.name)) {
    await work.outbox.record([{ type: 'part.failed', turnId, partId, error: `the ${agent.name} agent has no tool ${call.name}; it may use ${agentTools(agent.profile, tools.specs()).map((spec) => spec.name).join(', ') || 'none'}` }]);
    return;
  }
  const toolClass = tools.classify(call);
  const { kind, subject } = toolClass;
  const { mode, permissions } = agentPermissions(work, agent.profile);
  // A call a person was already asked about goes by their answer, not by a second question.
  const permission = asked ? 'ask' : decidePermission(permissions, mode, { tool: call.name, ...toolClass });
  if (permission === 'deny') {
    await work.outbox.record([{ type: 'part.failed', turnId, partId, error: refusal(mode, kind) }]);
    return;
  }
  // Checked before anybody is asked (a refusal says more: a corrected input would be refused too): a person never approves a call that could only fail.
  const invalid = asked ? null : (tools.validate?.(call) ?? null);
  if (invalid !== null) {
    await work.outbox.record([{ type: 'part.failed', turnId, partId, error: invalid }]);
    return;
  }
  const consumed: DomainEvent[] = [];
  if (permission === 'ask') {
    if (!asked) {
      const preview = await previewOf(tools, call, work.log);
      await work.outbox.record([{ type: 'approval.requested', turnId, approvalId: approvalId, partId, toolCallId: call.callId, toolName: call.name, input: call.input, kind, subject, preview }]);
      await reachWritten(work);
    }
    // Refused by the machines (the turn is being stopped): nobody will answer, so nothing runs.
    if (!work.fold.context.view!.turns[turnId]!.approvals.some((approval) => approval.id === approvalId)) return;
    const answered = work.tracing.approval(approvalId, call.name);
    const decision = await decided(work, approvalId).catch((error: unknown) => {
      answered('none: the turn stopped');
      throw error;
    });
    answered(decision);
    // Acting on the decision is consuming it, a refusal included: the second confirmation.
    if (decision === 'denied') await work.outbox.record([{ type: 'approval.consumed', turnId, approvalId: approvalId }]);
    if (decision !== 'granted') return;
    consumed.push({ type: 'approval.consumed', turnId, approvalId: approvalId });
  }
  if (kind !== 'read') await captureBefore(work);
  await work.outbox.record([...consumed, executing]);
  // The machines refuse a start after an interrupt; only a tool recorded as running may run.
  await reachWritten(work);
  if (partOf(work, call)?.state !== 'running.tool.executing') return;
  await finishTool(work, permission === 'ask' ? approvedCall(work, call, approvalId) : call, tools, partId, kind);
}

/**
 * The call as a person allowed it: bound to the file its diff was made
 * from, as the log recorded the question (not as this worker previewed it:
 * the approval may have been asked by a worker since lost).
 */
function approvedCall(work: TurnWork, call: ToolCall, approvalId: string): ToolCall {
  const preview = work.fold.context.view!.turns[work.turnId]!.approvals.find((approval) => approval.id === approvalId)?.preview;
  const digest = preview?.kind === 'diff' ? preview.digest : undefined;
  return { callId: call.callId, name: call.name, input: call.input, ...(digest === undefined ? {} : { approvedDigest: digest }) };
}

/** Runs a call recorded as executing, and records how it ended. */
async function finishTool(work: TurnWork, call: ToolCall, tools: ToolExecutor, partId: string, kind: ToolKind): Promise<void> {
  const { turnId, signal, options } = work;
  const part = partOf(work, call)!;
  const ran = work.tracing.tool(call, kind);
  const output = new LiveToolOutput((tail) => work.live({ turnId, step: part.step, partId, kind: 'toolOutput', text: tail }));
  const result = await untilAborted(tools.execute(call, signal, turnId, output.add), signal)
    .catch((error: unknown) => {
      ran(true);
      throw error;
    })
    .finally(() => output.close());
  ran(result.isError);
  // Durable with the turn's next write: what comes next waits for the log anyway, and a loss in between reads as an unknown outcome, never a second run.
  work.outbox.push([toolOutcomeEvent(turnId, partId, call, cutToolOutput(result.output, options.maxToolOutputChars), result.isError)]);
}

/**
 * The work tree before the turn's first change, once per turn; a workspace
 * without checkpoints says so once per thread. A capture that fails is
 * noted and the turn goes on: losing the undo is better than losing the turn.
 */
async function captureBefore(work: TurnWork): Promise<void> {
  const { checkpoints, turnId, threadId } = work;
  const view = work.fold.context.view!;
  if (!checkpoints) return;
  if ('off' in checkpoints) {
    if (view.checkpointsOff === null) await work.outbox.record([{ type: 'checkpoint.unavailable', reason: checkpoints.off }]);
    return;
  }
  if (view.turns[turnId]!.checkpoint?.before) return;
  try {
    const tree = await checkpoints.store.capture(threadId, turnId, 'before');
    await work.outbox.record([{ type: 'checkpoint.captured', turnId, side: 'before', ref: tree.ref, commit: tree.commit, diff: null }]);
  } catch (error) {
    await work.outbox.record([{ type: 'activity.recorded', turnId, kind: 'diagnostic', message: `no checkpoint before this turn: ${(error as Error).message}`, data: {} }]);
  }
}

/**
 * What the turn's calls kept running ends with the turn: before the `after`
 * checkpoint, so nothing they write escapes it, and on a way out that
 * captures nothing (a lost lease) at the latest. Ending it twice is ending nothing.
 */
const endTurnTools = (work: TurnWork): Promise<void> => work.tools?.endTurn?.(work.turnId) ?? Promise.resolve();

/** The work tree after a turn that changed it, with what it changed. */
async function captureAfter(work: TurnWork): Promise<void> {
  const { checkpoints, turnId, threadId } = work;
  await endTurnTools(work);
  if (!checkpoints || 'off' in checkpoints) return;
  await reachWritten(work);
  const before = work.fold.context.view!.turns[turnId]!.checkpoint?.before;
  if (!before) return;
  try {
    const tree = await checkpoints.store.capture(threadId, turnId, 'after');
    // Two reads of the repository side by side: the turn settles (and a run ends) once both are known.
    const [diff, uncaptured] = await Promise.all([diffToRecord(checkpoints.store, before.commit, tree.commit), uncapturedWrites(work, checkpoints.store)]);
    await work.outbox.record([{ type: 'checkpoint.captured', turnId, side: 'after', ref: tree.ref, commit: tree.commit, diff, ...(uncaptured.length > 0 ? { uncaptured } : {}) }]);
  } catch (error) {
    await work.outbox.record([{ type: 'activity.recorded', turnId, kind: 'diagnostic', message: `no checkpoint after this turn: ${(error as Error).message}`, data: {} }]);
  }
}

/**
 * The files this turn's write and edit calls changed that git ignores: the
 * checkpoints do not hold them, so the log says so. (What a command wrote
 * there is not known; the docs say so.)
 */
async function uncapturedWrites(work: TurnWork, store: WorkspaceCheckpoints): Promise<string[]> {
  const workspace = work.workspace;
  if (workspace === null) return [];
  const written = new Set<string>();
  for (const part of work.fold.context.view!.turns[work.turnId]!.messages[1].parts) {
    const path = (part.tool?.input as { path?: unknown } | null)?.path;
    if (part.state === 'completed' && (part.tool?.name === 'write' || part.tool?.name === 'edit') && typeof path === 'string') written.add(path);
  }
  if (written.size === 0) return [];
  const byAbsolute = new Map([...written].map((path) => [resolvePath(workspace, path), path]));
  const ignored = await store.ignored([...byAbsolute.keys()]);
  return ignored.map((path) => byAbsolute.get(path) ?? path).slice(0, MAX_UNCAPTURED);
}

/** Why a call was refused without asking, as the model reads it. */
const refusal = (mode: PermissionMode, kind: ToolKind): string =>
  mode === 'read-only' && kind !== 'read' ? `this run is read-only: ${kind === 'edit' ? 'files may not be changed' : 'commands may not run'}` : 'a rule of this thread denies this call';

/** The decision on an approval, whichever client made it, as soon as the fold has it. */
function decided(work: TurnWork, approvalId: string): Promise<Decision> {
  return whenFold(work, (view) => decisions[view?.turns[work.turnId]?.approvals.find((approval) => approval.id === approvalId)?.state ?? '']);
}

/** Settles with the promise, or rejects as soon as the signal aborts: a tool or provider that ignores the signal cannot hold a turn. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    // The raced promise is always observed, also when the signal wins: its late rejection is not a crash.
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

async function* abortable<T>(iterable: AsyncIterable<T>, signal: AbortSignal): AsyncIterable<T> {
  const iterator = iterable[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await untilAborted(iterator.next(), signal);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Ask the provider to stop, without waiting for one that will not.
    void iterator.return?.()?.catch(() => undefined);
  }
}

function ignoreSettled(error: unknown, work: TurnWork): null {
  // Someone settled it first (the engine's deadline, a lost lease): that is the outcome we wanted.
  if (error instanceof TurnloomError && ['illegal_transition', 'fenced'].includes(error.code)) return null;
  work.log.error({ ...errorFields(error), threadId: work.threadId, turnId: work.turnId }, 'could not settle the turn');
  return null;
}
