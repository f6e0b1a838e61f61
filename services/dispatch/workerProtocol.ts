import { z } from 'zod';
import { idPattern } from '../../bus/subjects.ts';
import { type DomainEvent, MAX_PREVIEW_PATCH_CHARS, sideTaskKinds, sideTextLimits } from '../../domain/index.ts';

/**
 * The worker protocol's messages. Whatever a worker sends is network input:
 * every message is parsed with these schemas before the engine acts on it.
 */

const id = z.string().regex(idPattern, 'must be 1-128 letters, digits, "_" or "-"');
/** Ids a provider makes up (tool call ids): anything printable, bounded. */
const foreignId = z.string().min(1).max(512);
const text = z.string();
/** A message of a replaced context, as a hook gave it: the same shapes `ProviderMessage` allows, nothing more. */
const providerMessage = z.union([
  z.object({ role: z.literal('user'), text }).strict(),
  z
    .object({
      role: z.literal('assistant'),
      parts: z.array(
        z.union([
          z.object({ kind: z.literal('text'), text }).strict(),
          z.object({ kind: z.literal('reasoning'), text, signature: text.nullable() }).strict(),
          z.object({ kind: z.literal('toolCall'), callId: z.string().min(1).max(256), name: z.string().min(1).max(256), input: z.unknown() }).strict(),
        ]),
      ),
    })
    .strict(),
  z.object({ role: z.literal('tool'), callId: z.string().min(1).max(256), name: z.string().min(1).max(256), output: text, isError: z.boolean() }).strict(),
]);
const usage = z.object({ input: z.number().int().min(0), output: z.number().int().min(0), reasoning: z.number().int().min(0), cacheRead: z.number().int().min(0), cacheWrite: z.number().int().min(0) }).strict();
const turnId = id;
const partId = id;
const commitId = z.string().regex(/^[0-9a-f]{40,64}$/, 'must be a git object id');
/** A checkpoint names at most this many files it could not hold. */
export const MAX_UNCAPTURED = 100;
const fileChange = z
  .object({
    path: z.string().min(1).max(4_096),
    status: z.enum(['added', 'modified', 'deleted', 'renamed']),
    additions: z.number().int().min(0),
    deletions: z.number().int().min(0),
    binary: z.boolean(),
    oldPath: z.string().min(1).max(4_096).optional(),
  })
  .strict();
const count = z.number().int().min(0);
/** A list of changes as the domain caps it: totals of everything, the first files listed. */
const fileChanges = { files: z.array(fileChange).max(100_000), filesChanged: count, additions: count, deletions: count, filesOmitted: count };

// A worker's preview is shown to people: bounded like everything else it writes, so a hostile model cannot fill a page with one.
const approvalPreview = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('diff'),
      path: z.string().min(1).max(4_096),
      patch: z.string().max(MAX_PREVIEW_PATCH_CHARS + 200),
      additions: count,
      deletions: count,
      created: z.boolean(),
      cut: z.boolean(),
      digest: z.string().max(80).optional(),
    })
    .strict(),
  z.object({ kind: z.literal('command'), command: z.string().max(MAX_PREVIEW_PATCH_CHARS), cwd: z.string().min(1).max(4_096) }).strict(),
  z.object({ kind: z.literal('unavailable'), reason: z.string().max(2_000) }).strict(),
]);

const toolSpec = z.object({ name: z.string().min(1).max(256), description: z.string().max(100_000), inputSchema: z.record(z.string(), z.unknown()) }).strict();
/** What a model call is told beyond the conversation; bounded, as a tool list and a prompt with project instructions can be long. */
const requestHeader = z
  .object({
    provider: z.string().min(1).max(128),
    model: z.string().max(512).nullable(),
    system: z.string().max(1_000_000),
    tools: z.array(toolSpec).max(1_000),
    params: z.record(z.string().max(128), z.union([z.string().max(4_096), z.number(), z.boolean()])).optional(),
    digest: z.string().min(1).max(128),
  })
  .strict();
const requestContext = z
  .object({
    agent: z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/),
    workspace: z.string().max(4_096).nullable(),
    platform: z.string().max(64),
    date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
    git: z.object({ branch: z.string().max(1_024).nullable(), status: z.string().max(16_384) }).strict().nullable(),
    provider: z.string().min(1).max(128),
    model: z.string().max(512).nullable(),
    instructions: z.array(z.object({ path: z.string().min(1).max(4_096), text: z.string().max(65_536), cut: z.boolean() }).strict()).max(32),
  })
  .strict();

/** The events a worker may record; lease events and a turn's end by failure or interrupt go through the engine. */
export type WorkerEvent = Extract<
  DomainEvent,
  {
    type:
      | 'session.started'
      | 'session.failed'
      | 'activity.recorded'
      | 'turn.started'
      | 'request.context'
      | 'request.header'
      | 'input.steered'
      | 'input.claimed'
      | 'context.replaced'
      | 'compaction.started'
      | 'context.compacted'
      | 'compaction.failed'
      | 'step.started'
      | 'response.started'
      | 'response.completed'
      | 'tools.started'
      | 'step.finished'
      | 'turn.completed'
      | 'part.started'
      | 'part.delta'
      | 'part.completed'
      | 'tool.inputDelta'
      | 'tool.inputReady'
      | 'tool.executing'
      | 'tool.result'
      | 'tool.failed'
      | 'part.failed'
      | 'part.interrupted'
      | 'approval.requested'
      | 'task.delegated'
      | 'approval.consumed'
      | 'approval.undelivered'
      | 'checkpoint.captured'
      | 'checkpoint.unavailable';
  }
>;

const event = <T extends z.ZodRawShape>(type: string, shape: T) => z.object({ type: z.literal(type), ...shape }).strict();

// Keyed by `type` (and a part's start by `kind`): a plain union tried each of its thirty-odd options in turn, strictly, and cost a streamed turn 6% of its CPU.
export const workerEventSchema: z.ZodType<WorkerEvent> = z.discriminatedUnion('type', [
  event('session.started', { providerSessionId: z.string().max(512).nullable() }),
  event('session.failed', { reason: text }),
  event('activity.recorded', {
    turnId: turnId.nullable(),
    kind: z.enum(['diagnostic', 'retry', 'error', 'repair', 'info', 'hook']),
    message: text,
    data: z.record(z.string(), z.unknown()),
  }),
  event('turn.started', { turnId }),
  event('request.context', { turnId, context: requestContext }),
  event('request.header', { turnId, step: z.number().int().min(1), header: requestHeader }),
  event('input.steered', { turnId, inputId: id, text: z.string().min(1) }),
  event('input.claimed', { turnId, inputIds: z.array(id).min(1).max(1_000), step: z.number().int().min(1) }),
  event('context.replaced', { turnId, step: z.number().int().min(1), messages: z.array(providerMessage).max(100_000), by: z.string().min(1).max(128), reason: text }),
  event('compaction.started', { turnId, step: z.number().int().min(1), reason: z.enum(['window', 'overflow']) }),
  event('context.compacted', { turnId, step: z.number().int().min(1), summary: text, keptFromTurnId: id, usage: usage.nullable() }),
  event('compaction.failed', { turnId, reason: text }),
  event('step.started', { turnId, step: z.number().int().min(1), digest: z.string().max(128).nullable() }),
  event('response.started', { turnId, step: z.number().int().min(1), responseId: z.string().max(512).nullable(), model: z.string().max(512).nullable() }),
  event('response.completed', { turnId, step: z.number().int().min(1), stopReason: z.string().max(64), rawReason: z.string().max(512).nullable() }),
  event('tools.started', { turnId, step: z.number().int().min(1), toolCallIds: z.array(foreignId).max(1_000) }),
  event('step.finished', {
    turnId,
    step: z.number().int().min(1),
    outcome: z.enum(['stop', 'toolCalls', 'error', 'interrupted']),
    finishReason: z.string().max(512).nullable(),
    usage: usage.nullable(),
    error: text.nullable(),
  }),
  event('turn.completed', { turnId, stopReason: z.string().max(64) }),
  z.discriminatedUnion('kind', [
    event('part.started', { turnId, partId, step: z.number().int().min(1), kind: z.enum(['text', 'reasoning']) }),
    event('part.started', { turnId, partId, step: z.number().int().min(1), kind: z.literal('tool'), toolCallId: foreignId, toolName: z.string().min(1).max(256) }),
  ]),
  event('part.delta', { turnId, partId, text }),
  event('part.completed', { turnId, partId, signature: text.nullable() }),
  event('tool.inputDelta', { turnId, partId, text }),
  event('tool.inputReady', { turnId, partId, toolCallId: foreignId, input: z.unknown() }),
  event('tool.executing', { turnId, partId, toolCallId: foreignId }),
  event('tool.result', { turnId, partId, toolCallId: foreignId, output: text }),
  event('tool.failed', { turnId, partId, toolCallId: foreignId, error: text }),
  event('part.failed', { turnId, partId, error: text }),
  event('part.interrupted', {
    turnId,
    partId,
    reason: text,
    tool: z.object({ toolCallId: foreignId, outcome: z.enum(['notStarted', 'unknown']), result: text }).strict().nullable(),
  }),
  event('approval.requested', {
    turnId,
    approvalId: id,
    partId,
    toolCallId: foreignId,
    toolName: z.string().min(1).max(256),
    input: z.unknown(),
    kind: z.enum(['read', 'edit', 'command']),
    subject: text,
    preview: approvalPreview.nullable().optional(),
  }),
  event('task.delegated', {
    turnId,
    partId,
    toolCallId: foreignId,
    childThreadId: id,
    agent: z.string().min(1).max(64),
    prompt: z.string().min(1).max(100_000),
    description: z.string().max(200).nullable(),
    mode: z.enum(['ask', 'auto-edits', 'full', 'read-only']),
  }),
  event('approval.consumed', { turnId, approvalId: id }),
  event('approval.undelivered', { turnId, approvalId: id, reason: text }),
  event('checkpoint.captured', {
    turnId,
    side: z.enum(['before', 'after']),
    ref: z.string().min(1).max(2_048),
    commit: commitId,
    diff: z.object({ ...fileChanges, patch: text, truncated: z.boolean() }).strict().nullable(),
    uncaptured: z.array(z.string().min(1).max(4_096)).max(MAX_UNCAPTURED).optional(),
  }),
  event('checkpoint.unavailable', { reason: text }),
]) as unknown as z.ZodType<WorkerEvent>;

/** Who a worker is: it says so with every heartbeat. */
export const helloSchema = z
  .object({
    workerId: id,
    environment: id,
    workspace: z.string().max(4_096).nullable(),
    host: z.string().min(1).max(255),
    pid: z.number().int().min(0),
    /** Its process's start time in clock ticks since boot, so a pid taken by a later process is told apart (absent: unknown). */
    startTicks: z.number().int().min(0).nullable().default(null),
    capacity: z.number().int().min(1).max(1_000),
    /** The turns it runs, with their tokens: each one's lease is renewed by this heartbeat. */
    running: z.array(z.object({ threadId: id, turnId: id, token: z.number().int().min(1) }).strict()).max(1_000),
  })
  .strict();

/**
 * A claim names itself (`claimId`, the same on every retry, so a lost answer
 * is asked again, not claimed twice) and brings the hash of a key the worker
 * chose: the engine never learns the key until the worker writes with it.
 */
export const claimSchema = z
  .object({ workerId: id, threadId: id, turnId: id, claimId: id, keyHash: z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 hex digest') })
  .strict();

/** What every write and read under a lease carries: the fencing token and the key only its holder knows. */
const lease = { workerId: id, threadId: id, turnId: id, token: z.number().int().min(1), key: z.string().min(16).max(128) };

export const recordSchema = z
  .object({
    ...lease,
    /** The worker's running number of this write under this lease: a retry sends the same one, and is answered, not repeated. */
    seq: z.number().int().min(1),
    events: z.array(workerEventSchema).min(1).max(10_000),
  })
  .strict();

/** Events a worker wants decided against the log, not written: a step checked before its model call (see `Outbox.check`). */
export const checkSchema = z
  .object({ ...lease, events: z.array(workerEventSchema).min(1).max(10_000) })
  .strict();

export const settleSchema = z
  .object({
    ...lease,
    outcome: z.union([
      z.object({ kind: z.literal('failed'), error: text }).strict(),
      z.object({ kind: z.literal('interrupted'), cause: z.literal('provider'), reason: text }).strict(),
    ]),
  })
  .strict();

/** One line of side work: no line breaks or other control characters, within the kind's limit. */
const sideLine = z.string().min(1).max(Math.max(...Object.values(sideTextLimits))).regex(/^[^\u0000-\u001f\u007f]+$/, 'must be one line without control characters');

/**
 * What a worker's side work for a completed turn came to. It shows the lease
 * it ran that turn under (the turn's `turn.leased` event is at seq `token`
 * and keeps the key's hash), so no other worker can title or summarise it.
 */
export const sideWorkSchema = z
  .object({
    ...lease,
    kind: z.enum(sideTaskKinds),
    model: z.string().max(512).nullable(),
    usage: usage.nullable(),
    outcome: z.union([z.object({ kind: z.literal('done'), text: sideLine }).strict(), z.object({ kind: z.literal('failed'), error: z.string().min(1).max(2_000) }).strict()]),
  })
  .strict()
  .refine((request) => request.outcome.kind !== 'done' || request.outcome.text.length <= sideTextLimits[request.kind], {
    message: `a title is at most ${sideTextLimits.title} characters, a summary ${sideTextLimits.summary}`,
    path: ['outcome', 'text'],
  });

/** Reads of the leased thread, for the worker's own fold: the API's thread methods, under the lease. */
export const leasedReadSchemas = {
  'thread.get': z.object({ ...lease, turns: z.number().int().min(1).max(100).default(20) }).strict(),
  'thread.turns': z.object({ ...lease, before: z.string().max(200), limit: z.number().int().min(1).max(100).default(20) }).strict(),
  'thread.events': z.object({ ...lease, after: z.number().int().min(0), limit: z.number().int().min(1).max(1_000).default(1_000) }).strict(),
  'thread.watch': z.object({ ...lease, deliverTo: z.string().min(8).max(256).regex(/^[A-Za-z0-9_.-]+$/), watchId: id.optional() }).strict(),
  'thread.unwatch': z.object({ ...lease, watchId: id }).strict(),
} as const;

export const workerMethods = ['hello', 'claim', 'record', 'check', 'settle', 'sideWork', ...Object.keys(leasedReadSchemas)] as const;
export type WorkerMethod = (typeof workerMethods)[number];

export type Hello = z.output<typeof helloSchema>;
export type Claim = z.output<typeof claimSchema>;
export type RecordRequest = z.output<typeof recordSchema>;
export type SettleRequest = z.output<typeof settleSchema>;
export type SideWorkRequest = z.output<typeof sideWorkSchema>;
export interface LeaseProof {
  workerId: string;
  threadId: string;
  turnId: string;
  token: number;
  key: string;
}

/** What the engine answers a heartbeat: its timing, and which of the listed leases the worker still holds. */
export interface HelloAnswer {
  heartbeatMs: number;
  leaseTimeoutMs: number;
  leases: Array<{ threadId: string; turnId: string; token: number; held: boolean }>;
}

/** A turn waiting for a worker, on `<p>.v1.work.offer.<environment>`. */
export interface Offer {
  threadId: string;
  turnId: string;
}

/**
 * The engine asks a worker of the thread's environment, on
 * `<p>.v1.work.task.<environment>`, to undo what the revert's turns changed
 * (each between its checkpoints): see `WorkspaceCheckpoints.undo`.
 */
export const revertTaskSchema = z
  .object({
    task: z.literal('revert'),
    threadId: id,
    revertId: id,
    turns: z.array(z.object({ turnId, before: commitId, after: commitId }).strict()).min(1).max(10_000),
    force: z.boolean(),
  })
  .strict();
export type RevertTask = z.output<typeof revertTaskSchema>;
const capturedTree = z.object({ ref: z.string().min(1).max(4_096), commit: commitId }).strict();
export const revertAnswerSchema = z.object({ changes: z.object(fileChanges).strict(), saved: capturedTree }).strict();
export type RevertAnswer = z.output<typeof revertAnswerSchema>;
