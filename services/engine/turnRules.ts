import { type DomainEvent, type PartView, type ProviderErrorInfo, type StopReason, type ToolCall, type Usage, TurnloomError, childId, isOpenPart } from '../../domain/index.ts';

/**
 * The pure rules of a turn's step loop, with no I/O: what a worker records
 * at each turning point. They sit beside `settleTurn.ts` (how the engine
 * closes a turn that cannot close itself), so both sides close things the
 * same way.
 */

/** What a step's answer was, as ingestion saw it. */
export interface StepAnswer {
  step: number;
  usage: Usage | null;
  stopReason: StopReason | null;
  rawReason: string | null;
  toolCalls: readonly ToolCall[];
}

/** The approval a tool call waits on is named after its part. */
export const approvalIdFor = (partId: string): string => childId(partId, 'approval');

/** The step answered without asking for tools: it closes, and the turn completes. */
export function completeTurn(turnId: string, answer: StepAnswer): DomainEvent[] {
  return [
    closeStep(turnId, answer, 'stop'),
    { type: 'turn.completed', turnId, stopReason: answer.stopReason ?? 'stop' },
  ];
}

/**
 * The step closes and the next one may start: after its tools ran
 * (`toolCalls`), or when the model stopped while input was steered in
 * (`stop`), which the next step carries.
 */
export const closeStep = (turnId: string, answer: StepAnswer, outcome: 'toolCalls' | 'stop'): DomainEvent => ({
  type: 'step.finished',
  turnId,
  step: answer.step,
  outcome,
  finishReason: answer.rawReason,
  usage: answer.usage,
  error: null,
});

/**
 * Tools are off for this run: each call the step made is closed unrun, with
 * a result saying it is safe to run, then the step and the turn.
 */
export function endWithoutTools(turnId: string, answer: StepAnswer, parts: readonly PartView[]): DomainEvent[] {
  const unrun = answer.toolCalls.flatMap((call): DomainEvent[] => {
    const part = parts.find((candidate) => candidate.tool?.callId === call.callId && candidate.state === 'running.tool.inputReady');
    if (!part) return [];
    const result = 'This tool call was recorded but not run (tools are off for this run). It is safe to run it.';
    return [{ type: 'part.interrupted', turnId, partId: part.id, reason: 'tools are off', tool: { toolCallId: call.callId, outcome: 'notStarted', result } }];
  });
  return [...unrun, closeStep(turnId, answer, 'toolCalls'), { type: 'turn.completed', turnId, stopReason: answer.stopReason ?? 'toolCalls' }];
}

/** A failed attempt keeps its partial output, marked failed, and its step closes with the error. */
export function closeFailedStep(turnId: string, step: number, usage: Usage | null, error: ProviderErrorInfo, attemptParts: readonly PartView[]): DomainEvent[] {
  return [
    ...attemptParts.filter(isOpenPart).map((part): DomainEvent => ({ type: 'part.failed', turnId, partId: part.id, error: `attempt failed: ${error.message}` })),
    { type: 'step.finished', turnId, step, outcome: 'error', finishReason: null, usage, error: `${error.kind}: ${error.message}` },
  ];
}

/** The retry a failed attempt gets, recorded before the wait. */
export const retryActivity = (turnId: string, error: ProviderErrorInfo, attempt: number, maxAttempts: number, delayMs: number): DomainEvent => ({
  type: 'activity.recorded',
  turnId,
  kind: 'retry',
  message: `${error.kind} (${error.message}); attempt ${attempt + 1} of ${maxAttempts} in ${delayMs} ms`,
  data: { attempt, nextAttempt: attempt + 1, delayMs, error: { ...error } },
});

/** The error that ended a turn, kept whole on the thread (and, for a full context, marked for compaction). */
export function failureActivity(turnId: string, error: { provider: ProviderErrorInfo } | Error): DomainEvent {
  if ('provider' in error) {
    const info = error.provider;
    return {
      type: 'activity.recorded',
      turnId,
      kind: 'error',
      message: info.kind === 'contextOverflow' ? `the context is full; compaction is needed: ${info.message}` : info.message,
      data: { error: { ...info }, retryable: false },
    };
  }
  const details = error instanceof TurnloomError ? { code: error.code, ...error.details } : {};
  return { type: 'activity.recorded', turnId, kind: 'error', message: error.message, data: details };
}

/** A tool's output as the model and the log get it: past `limit` characters it is cut, with a note saying how much. */
export function cutToolOutput(output: string, limit: number): string {
  return output.length > limit ? `${output.slice(0, limit)}\n[… ${output.length - limit} more characters cut]` : output;
}

/** What a tool's run records: its output, or its failure, as the result the model reads. */
export const toolOutcomeEvent = (turnId: string, partId: string, call: ToolCall, output: string, isError: boolean): DomainEvent =>
  isError ? { type: 'tool.failed', turnId, partId, toolCallId: call.callId, error: output } : { type: 'tool.result', turnId, partId, toolCallId: call.callId, output };
