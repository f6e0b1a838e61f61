import { setTimeout as sleep } from 'node:timers/promises';
import { systemCommandId } from '../engine/commands.ts';
import { type DomainEvent, type ProviderAdapter, type ProviderChoice, ProviderError, type ProviderErrorInfo, type ProviderRequest, type StoredEvent, type ToolCall, type ToolExecutor, TurnloomError, childId, isOpenPart } from '../../domain/index.ts';
import type { Engine } from '../engine/engine.ts';
import { deriveMessages, systemPrompt } from './deriveRequest.ts';
import { type RetryPolicy, defaultRetryPolicy, retryDelay } from './retryPolicy.ts';
import { type LiveDelta, StepIngestion } from './stepIngestion.ts';

export interface TurnRunnerOptions {
  engine: Engine;
  /** The adapter for a turn's provider choice; `undefined` fails the turn with a clear error. */
  adapterFor: (choice: ProviderChoice) => ProviderAdapter | undefined;
  /** Where live deltas go (the ephemeral channel). */
  live?: (threadId: string, delta: LiveDelta) => void;
  /** A stream silent this long counts as a dropped connection. */
  idleTimeoutMs?: number;
  maxSteps?: number;
  /** A tool's output longer than this is cut (the model and the log get a note saying how much): events stay small enough to travel. */
  maxToolOutputChars?: number;
  /**
   * Whether the tools a step asks for are run (and the turn goes on). `false`,
   * or `false` for a given step: they are recorded but not run, and the turn
   * ends with that answer (a plan-only run, or the end of a recording).
   */
  runTools?: boolean | ((step: number) => boolean);
  /** Merged over the defaults. */
  retry?: Partial<RetryPolicy>;
  flushMs?: number;
  maxBufferChars?: number;
  random?: () => number;
  /**
   * Sees (and may replace) each request before it is sent, like a middleware.
   * Whatever it returns is checked against the log: it may change the model,
   * tools or system prompt, never the conversation.
   */
  interceptRequest?: (request: ProviderRequest) => ProviderRequest;
}

const noTools: ToolExecutor = {
  specs: () => [],
  needsApproval: () => false,
  execute: async (call) => ({ output: `no tool named ${call.name} is available`, isError: true }),
};

type Decision = 'granted' | 'denied' | 'expired' | 'cancelled';

class StepFailed extends Error {
  readonly info: ProviderErrorInfo;
  constructor(info: ProviderErrorInfo) {
    super(info.message);
    this.info = info;
  }
}

/**
 * Runs turns in this process: it reacts to committed events (a requested
 * turn, an interrupt, an approval decision, a stop), drives the provider
 * call by call, runs the tools in order, and records everything through the
 * engine, where the machines accept or refuse it. Every path ends the turn:
 * completed, failed, or interrupted (confirmed here, or by the deadline).
 */
export class TurnRunner {
  private readonly options: Required<Omit<TurnRunnerOptions, 'live' | 'interceptRequest' | 'retry'>> &
    Pick<TurnRunnerOptions, 'live' | 'interceptRequest'> & { retry: RetryPolicy };
  /** Keyed `threadId/turnId`: turn and approval ids are only unique within their thread. */
  private readonly runs = new Map<string, { threadId: string; controller: AbortController; done: Promise<void> }>();
  private readonly decisions = new Map<string, (decision: Decision) => void>();
  private unsubscribe: (() => void) | undefined;

  constructor(options: TurnRunnerOptions) {
    this.options = {
      idleTimeoutMs: 60_000,
      maxSteps: 50,
      maxToolOutputChars: 100_000,
      runTools: true,
      flushMs: 50,
      maxBufferChars: 24_000,
      random: Math.random,
      ...options,
      retry: { ...defaultRetryPolicy, ...options.retry },
    };
  }

  /** Starts reacting, and runs the turns a previous process accepted but never started. */
  async start(): Promise<this> {
    const { engine } = this.options;
    this.unsubscribe = engine.onCommitted((events) => this.react(events));
    for (const { threadId, turnId } of engine.listOpenTurns()) {
      if ((await engine.getThread(threadId)).turns[turnId]?.state === 'requested') this.launch(threadId, turnId);
    }
    return this;
  }

  private react(events: readonly StoredEvent[]): void {
    for (const { threadId, threadSeq, event } of events) {
      switch (event.type) {
        case 'turn.requested':
          this.launch(threadId, event.turnId);
          break;
        case 'turn.interruptRequested':
          this.runs.get(`${threadId}/${event.turnId}`)?.controller.abort(new Error(event.reason));
          break;
        case 'approval.granted':
        case 'approval.denied':
        case 'approval.expired':
        case 'approval.cancelled':
          this.decisions.get(`${threadId}/${event.approvalId}`)?.(event.type.slice('approval.'.length) as Decision);
          break;
        case 'session.stopRequested':
        case 'turn.completed':
        case 'turn.failed':
        case 'turn.interrupted':
          this.confirmStopWhenFree(threadId, threadSeq).catch(ignoreIllegal);
          break;
        default:
          break;
      }
    }
  }

  private launch(threadId: string, turnId: string): void {
    const key = `${threadId}/${turnId}`;
    if (this.runs.has(key)) return;
    const controller = new AbortController();
    const done = this.runTurn(threadId, turnId, controller.signal)
      .catch((error: unknown) => console.error(`turnloom runner: turn ${key} could not be settled`, error))
      .finally(() => this.runs.delete(key));
    this.runs.set(key, { threadId, controller, done });
  }

  /**
   * The provider sessions here live only as long as a call, so a stop is
   * confirmed as soon as no turn holds the session: at the request, or when
   * the turn that held it ends, whoever ran that turn.
   */
  private async confirmStopWhenFree(threadId: string, threadSeq: number): Promise<void> {
    const view = await this.options.engine.getThread(threadId);
    if (view.session.state !== 'stopping' || view.openTurnId) return;
    await this.options.engine.submit({ type: 'session.confirmStopped', commandId: systemCommandId('stopped', threadId, threadSeq), threadId }).catch(ignoreIllegal);
  }

  private async runTurn(threadId: string, turnId: string, signal: AbortSignal): Promise<void> {
    const { engine } = this.options;
    let sequence = 0;
    const record = async (events: DomainEvent[]) => {
      if (events.length > 0) await engine.submit({ type: 'turn.record', commandId: systemCommandId('record', threadId, turnId, ++sequence), threadId, turnId, events });
    };
    const settle = (outcome: { kind: 'failed'; error: string } | { kind: 'interrupted'; cause: 'provider'; reason: string }) =>
      engine.submit({ type: 'turn.settle', commandId: systemCommandId('settle', threadId, turnId), threadId, turnId, outcome }).catch(ignoreIllegal);

    let view = await engine.getThread(threadId);
    const turn = view.turns[turnId];
    if (!turn || turn.state !== 'requested') return;
    try {
      const adapter = this.options.adapterFor(turn.provider);
      if (!adapter) throw new TurnloomError('unavailable', `no provider "${turn.provider.name}" is configured on this server`);
      const opening: DomainEvent[] = [];
      if (view.session.state === 'starting') {
        try {
          opening.push({ type: 'session.started', providerSessionId: (await adapter.startSession?.())?.providerSessionId ?? null });
        } catch (error) {
          await record([{ type: 'session.failed', reason: (error as Error).message }]);
          throw error;
        }
      }
      await record([...opening, { type: 'turn.started', turnId }]);
      const tools = adapter.tools ?? noTools;
      let attempt = 1;
      let answered = 0;
      for (let step = 1; ; step++) {
        if (signal.aborted) throw signal.reason;
        view = await engine.getThread(threadId);
        const derived: ProviderRequest = { model: turn.provider.model, system: systemPrompt(view), messages: deriveMessages(view), tools: tools.specs() };
        await record([{ type: 'step.started', turnId, step, digest: null }]);
        const request = this.options.interceptRequest?.(derived) ?? derived;
        this.assertRequestMatchesLog(threadId, request);
        const ingestion = new StepIngestion({
          turnId,
          step,
          ...(this.options.live ? { live: (delta) => this.options.live!(threadId, delta) } : {}),
          flushMs: this.options.flushMs,
          maxBufferChars: this.options.maxBufferChars,
        });
        try {
          await this.streamStep(adapter, request, ingestion, record, signal);
        } catch (error) {
          if (signal.aborted || !(error instanceof StepFailed)) throw error;
          await this.closeFailedStep(threadId, turnId, step, error.info, ingestion, record);
          const delay = retryDelay(error.info, attempt, this.options.retry, this.options.random);
          if (delay === null) throw error;
          await record([
            {
              type: 'activity.recorded',
              turnId,
              kind: 'retry',
              message: `${error.info.kind} (${error.info.message}); attempt ${attempt + 1} of ${this.options.retry.maxAttempts} in ${delay} ms`,
              data: { attempt, nextAttempt: attempt + 1, delayMs: delay, error: { ...error.info } },
            },
          ]);
          attempt += 1;
          await sleep(delay, undefined, { signal }).catch(() => Promise.reject(signal.reason));
          continue;
        }
        attempt = 1;
        const calls = ingestion.toolCalls;
        if (calls.length === 0) {
          await record([
            { type: 'step.finished', turnId, step, outcome: 'stop', finishReason: ingestion.rawReason, usage: ingestion.usage, error: null },
            { type: 'turn.completed', turnId, stopReason: ingestion.stopReason ?? 'stop' },
          ]);
          return;
        }
        const { runTools } = this.options;
        if (!(typeof runTools === 'function' ? runTools(step) : runTools)) {
          await this.endWithoutTools(threadId, turnId, step, ingestion, record);
          return;
        }
        await record([{ type: 'tools.started', turnId, step, toolCallIds: calls.map((call) => call.callId) }]);
        for (const call of calls) await this.runTool(threadId, turnId, call, tools, record, signal);
        await record([{ type: 'step.finished', turnId, step, outcome: 'toolCalls', finishReason: ingestion.rawReason, usage: ingestion.usage, error: null }]);
        if (++answered >= this.options.maxSteps) throw new TurnloomError('unavailable', `the turn reached its limit of ${this.options.maxSteps} model calls`);
      }
    } catch (error) {
      if (signal.aborted) {
        const stopped = (await engine.getThread(threadId)).turns[turnId]?.interrupt?.reason;
        await settle({ kind: 'interrupted', cause: 'provider', reason: stopped ?? (signal.reason as Error | undefined)?.message ?? 'the turn was stopped' });
        return;
      }
      if (!(error instanceof StepFailed) && !(error instanceof TurnloomError)) console.error(`turnloom runner: turn ${turnId} failed`, error);
      await record([failureActivity(turnId, error)]).catch(() => undefined);
      await settle({ kind: 'failed', error: error instanceof StepFailed ? `${error.info.kind}: ${error.info.message}` : (error as Error).message });
    }
  }

  /**
   * What the model sees is exactly what was recorded: right before the call,
   * the conversation is derived again from the durable log and compared, byte
   * for byte, with the request about to be sent. A difference fails the step.
   */
  private assertRequestMatchesLog(threadId: string, request: ProviderRequest): void {
    const stored = this.options.engine.readStoredView(threadId);
    const expected = JSON.stringify(stored ? deriveMessages(stored) : []);
    const outgoing = JSON.stringify(request.messages);
    if (expected === outgoing) return;
    let at = 0;
    while (at < expected.length && expected[at] === outgoing[at]) at++;
    throw new TurnloomError('conflict', `the request diverges from the durable log at character ${at}; refusing to send it`, {
      expected: expected.slice(Math.max(0, at - 40), at + 40),
      outgoing: outgoing.slice(Math.max(0, at - 40), at + 40),
    });
  }

  /** One model call: canonical events in, domain events recorded as they become due; a silent stream is a dropped connection. */
  private async streamStep(
    adapter: ProviderAdapter,
    request: ProviderRequest,
    ingestion: StepIngestion,
    record: (events: DomainEvent[]) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const call = new AbortController();
    const onAbort = () => call.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let idle = false;
    let timer = setTimeout(() => ((idle = true), call.abort()), this.options.idleTimeoutMs);
    // Deltas still buffered when the stream goes quiet are written by the clock; a failure there fails the step.
    let flushFailure: unknown;
    const ticker = setInterval(() => void record(ingestion.take()).catch((error: unknown) => (flushFailure ??= error)), this.options.flushMs);
    try {
      for await (const event of abortable(adapter.stream(request, call.signal), call.signal)) {
        clearTimeout(timer);
        timer = setTimeout(() => ((idle = true), call.abort()), this.options.idleTimeoutMs);
        if (event.type === 'turn.failed') throw new StepFailed(event.error);
        ingestion.accept(event);
        await record(ingestion.take());
        if (flushFailure) throw flushFailure;
      }
      if (ingestion.stopReason === null) throw new StepFailed({ kind: 'connection', message: 'the stream ended before the answer completed', status: null, retryAfterMs: null });
      ingestion.closeUnfinished();
      await record(ingestion.drain());
      if (flushFailure) throw flushFailure;
    } catch (error) {
      if (signal.aborted) throw error;
      if (idle) throw new StepFailed({ kind: 'connection', message: `no data for ${this.options.idleTimeoutMs} ms`, status: null, retryAfterMs: null });
      if (error instanceof ProviderError) throw new StepFailed(error.info);
      throw error;
    } finally {
      clearTimeout(timer);
      clearInterval(ticker);
      signal.removeEventListener('abort', onAbort);
      // On a failure or an interrupt, whatever arrived is still kept, as far as it can be.
      await record(ingestion.drain()).catch(() => undefined);
    }
  }

  /** Without tools: each call is closed unrun with a result saying so, then the step and the turn. */
  private async endWithoutTools(threadId: string, turnId: string, step: number, ingestion: StepIngestion, record: (events: DomainEvent[]) => Promise<void>): Promise<void> {
    const parts = (await this.options.engine.getThread(threadId)).turns[turnId]!.messages[1].parts;
    const unrun = ingestion.toolCalls.flatMap((call): DomainEvent[] => {
      const part = parts.find((candidate) => candidate.tool?.callId === call.callId && candidate.state === 'running.tool.inputReady');
      if (!part) return [];
      const result = 'This tool call was recorded but not run (tools are off for this run). It is safe to run it.';
      return [{ type: 'part.interrupted', turnId, partId: part.id, reason: 'tools are off', tool: { toolCallId: call.callId, outcome: 'notStarted', result } }];
    });
    await record([
      ...unrun,
      { type: 'step.finished', turnId, step, outcome: 'toolCalls', finishReason: ingestion.rawReason, usage: ingestion.usage, error: null },
      { type: 'turn.completed', turnId, stopReason: ingestion.stopReason ?? 'toolCalls' },
    ]);
  }

  /** A failed attempt keeps its partial output, marked failed, and its step closes with the error. */
  private async closeFailedStep(
    threadId: string,
    turnId: string,
    step: number,
    error: ProviderErrorInfo,
    ingestion: StepIngestion,
    record: (events: DomainEvent[]) => Promise<void>,
  ): Promise<void> {
    const view = await this.options.engine.getThread(threadId);
    const open = view.turns[turnId]!.messages[1].parts.filter((part) => ingestion.partIds().includes(part.id) && isOpenPart(part));
    await record([
      ...open.map((part): DomainEvent => ({ type: 'part.failed', turnId, partId: part.id, error: `attempt failed: ${error.message}` })),
      { type: 'step.finished', turnId, step, outcome: 'error', finishReason: null, usage: ingestion.usage, error: `${error.kind}: ${error.message}` },
    ]);
  }

  private async runTool(
    threadId: string,
    turnId: string,
    call: ToolCall,
    tools: ToolExecutor,
    record: (events: DomainEvent[]) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const view = await this.options.engine.getThread(threadId);
    const part = view.turns[turnId]!.messages[1].parts.find((candidate) => candidate.tool?.callId === call.callId);
    if (!part || part.state !== 'running.tool.inputReady') return; // refused earlier; its diagnostic says why
    const partId = part.id;
    const executing: DomainEvent = { type: 'tool.executing', turnId, partId, toolCallId: call.callId };
    if (tools.needsApproval(call)) {
      const approvalId = childId(partId, 'approval');
      const { decided, cancel } = this.waitForDecision(threadId, turnId, approvalId, signal);
      try {
        await record([{ type: 'approval.requested', turnId, approvalId, partId, toolCallId: call.callId, toolName: call.name, input: call.input }]);
      } catch (error) {
        cancel();
        throw error;
      }
      const asked = (await this.options.engine.getThread(threadId)).turns[turnId]!.approvals.some((approval) => approval.id === approvalId);
      // Refused by the machines (the turn is being stopped): nobody will answer, so nothing runs.
      if (!asked) cancel();
      const decision = await decided;
      // Acting on the decision is consuming it, a refusal included: the second confirmation.
      if (decision === 'denied') await record([{ type: 'approval.consumed', turnId, approvalId }]);
      if (decision !== 'granted') return;
      await record([{ type: 'approval.consumed', turnId, approvalId }, executing]);
    } else {
      await record([executing]);
    }
    // The machines refuse a start after an interrupt; only a tool recorded as running may run.
    const now = await this.options.engine.getThread(threadId);
    if (now.turns[turnId]!.messages[1].parts.find((candidate) => candidate.id === partId)?.state !== 'running.tool.executing') return;
    const result = await untilAborted(tools.execute(call, signal), signal);
    const limit = this.options.maxToolOutputChars;
    const output = result.output.length > limit ? `${result.output.slice(0, limit)}\n[… ${result.output.length - limit} more characters cut]` : result.output;
    await record([
      result.isError
        ? { type: 'tool.failed', turnId, partId, toolCallId: call.callId, error: output }
        : { type: 'tool.result', turnId, partId, toolCallId: call.callId, output },
    ]);
  }

  /**
   * The decision on an approval once it is committed, whichever client made
   * it. Registered before the request is recorded so none is missed; `cancel`
   * ends the wait (and its bookkeeping) when nobody will answer.
   */
  private waitForDecision(threadId: string, turnId: string, approvalId: string, signal: AbortSignal): { decided: Promise<Decision>; cancel: () => void } {
    const key = `${threadId}/${approvalId}`;
    let finish: (decision: Decision) => void = () => undefined;
    const decided = new Promise<Decision>((resolve, reject) => {
      const onAbort = () => {
        this.decisions.delete(key);
        reject(signal.reason);
      };
      finish = (decision) => {
        this.decisions.delete(key);
        signal.removeEventListener('abort', onAbort);
        resolve(decision);
      };
      this.decisions.set(key, finish);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // Whoever awaits `decided` comes later (after the request is recorded): an abort before then is not unhandled.
    decided.catch(() => undefined);
    this.options.engine.getThread(threadId).then(
      (view) => {
        const state = view.turns[turnId]?.approvals.find((approval) => approval.id === approvalId)?.state;
        if (state === 'approved') finish('granted');
        else if (state === 'denied' || state === 'expired' || state === 'cancelled') finish(state);
      },
      () => finish('cancelled'),
    );
    return { decided, cancel: () => finish('cancelled') };
  }

  get activeTurns(): number {
    return this.runs.size;
  }

  /** Stops reacting; turns still running are interrupted and settled before this resolves. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    for (const run of this.runs.values()) run.controller.abort(new Error('the server is shutting down'));
    await Promise.allSettled([...this.runs.values()].map((run) => run.done));
  }
}

/** The error that ended a turn, kept whole on the thread (and, for a full context, marked for compaction). */
function failureActivity(turnId: string, error: unknown): DomainEvent {
  if (error instanceof StepFailed) {
    const { info } = error;
    return {
      type: 'activity.recorded',
      turnId,
      kind: 'error',
      message: info.kind === 'contextOverflow' ? `the context is full; compaction is needed: ${info.message}` : info.message,
      data: { error: { ...info }, retryable: false },
    };
  }
  const details = error instanceof TurnloomError ? { code: error.code, ...error.details } : {};
  return { type: 'activity.recorded', turnId, kind: 'error', message: (error as Error).message, data: details };
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

function ignoreIllegal(error: unknown): void {
  // Someone settled it first (the provider, the deadline, a repair): that is the outcome we wanted.
  if (error instanceof TurnloomError && error.code === 'illegal_transition') return;
  console.error('turnloom runner:', error);
}
