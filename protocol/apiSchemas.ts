import { z } from 'zod';
import { idPattern } from '../bus/subjects.ts';

/**
 * Command ids the system makes up start with this, and a client's may not,
 * so no client id can ever take a system command's receipt.
 */
export const SYSTEM_COMMAND_PREFIX = 'sys:';

const id = z.string().regex(idPattern, 'must be 1-128 letters, digits, "_" or "-"');
const commandId = z
  .string()
  .min(1)
  .max(200)
  .refine((value) => !value.startsWith(SYSTEM_COMMAND_PREFIX), `must not start with "${SYSTEM_COMMAND_PREFIX}" (reserved for the system)`)
  .optional()
  .describe('Stays the same across retries; generated and returned when absent');
const provider = z
  .object({ name: z.string().min(1).max(64), model: z.string().min(1).max(200).nullable().default(null) })
  .strict()
  .describe('Which adapter runs the turn; defaults to the server’s provider');

const compactionSetting = z.enum(['auto', 'off']).describe('`off`: a turn whose context no longer fits fails instead of compacting older turns');
const permissionMode = z.enum(['ask', 'auto-edits', 'full', 'read-only']).describe('`ask`: reads run, edits and commands ask; `auto-edits`: commands ask; `full`: all run; `read-only`: only reads run');
const agentName = z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/, 'must be 1-32 letters, digits, "_" or "-"');
const rules = z
  .array(
    z
      .object({
        tool: z.string().min(1).max(64).describe('a tool name, or *'),
        pattern: z.string().min(1).max(1_000).describe('what the call touches (a path, a command); * matches anything, unless match is exact'),
        decision: z.enum(['allow', 'ask', 'deny']),
        match: z.enum(['exact', 'wildcard']).optional().describe('exact: the pattern as written, * included; wildcard (the default): * stands for any run of characters'),
      })
      .strict(),
  )
  .max(200);

/**
 * The parameters of every API method. Unknown fields are refused
 * (`invalid_payload`), so a typo never passes silently.
 */
export const apiParams = {
  'thread.create': z
    .object({
      commandId,
      threadId: id.optional(),
      title: z.string().max(200).default('New thread'),
      workspace: z.string().max(4096).nullable().default(null),
      environment: id.default('default').describe('Which workers run its turns: those serving this environment'),
      mode: permissionMode.default('ask'),
      rules: rules.default([]),
      compaction: compactionSetting.default('auto'),
      agent: agentName.optional().describe('The agent its turns run as when they name none (default `build`)'),
    })
    .strict(),
  'thread.configure': z
    .object({ commandId, threadId: id, mode: permissionMode.optional(), rules: rules.optional().describe('Replaces the thread’s rules'), compaction: compactionSetting.optional(), agent: agentName.optional().describe('The agent its turns run as when they name none') })
    .strict()
    .refine((params) => params.mode !== undefined || params.rules !== undefined || params.compaction !== undefined || params.agent !== undefined, 'give a mode, rules, compaction, an agent, or some of them'),
  'thread.rename': z.object({ commandId, threadId: id, title: z.string().min(1).max(200) }).strict(),
  'thread.archive': z.object({ commandId, threadId: id }).strict(),
  'thread.list': z
    .object({
      includeArchived: z.boolean().default(false),
      limit: z.number().int().min(1).max(1_000).default(100),
      cursor: z.string().max(200).optional().describe('`nextCursor` of the previous page; newest threads first'),
    })
    .strict(),
  'thread.get': z
    .object({ threadId: id, turns: z.number().int().min(1).max(100).default(20).describe('The newest turns to include (fewer when they would not fit one answer)') })
    .strict(),
  'thread.turns': z
    .object({
      threadId: id,
      before: z.string().max(200).describe('`olderCursor` of `thread.get` or of the previous page'),
      limit: z.number().int().min(1).max(100).default(20),
    })
    .strict(),
  'thread.events': z.object({ threadId: id, after: z.number().int().min(0), limit: z.number().int().min(1).max(1_000).default(1_000) }).strict(),
  'thread.watch': z
    .object({
      threadId: id,
      deliverTo: z.string().min(8).max(256).regex(/^[A-Za-z0-9_.-]+$/, 'must be a subject').describe('An inbox of the caller’s connection (same prefix as its reply inbox)'),
      watchId: id.optional().describe('Renews this watch (send it again before `expiresInMs` passes); left out, a new watch'),
    })
    .strict(),
  'thread.unwatch': z.object({ watchId: id }).strict(),
  'turn.start': z.object({ commandId, threadId: id, turnId: id.optional(), input: z.object({ text: z.string().min(1).max(200_000) }).strict(), provider: provider.optional(), mode: permissionMode.optional().describe('This run’s permission mode, instead of the thread’s'),
    agent: agentName.optional().describe('The agent it runs as (`build`, `plan`, or one the worker’s configuration defines), instead of the thread’s'),
    whileRunning: z.enum(['queue', 'steer', 'interrupt']).optional().describe('When a turn is already open: queue it after (default), steer the input into the open turn, or interrupt the open turn and start after it'),
  }).strict(),
  'turn.interrupt': z.object({ commandId, threadId: id, turnId: id.optional(), reason: z.string().max(1_000).default('interrupted by the user') }).strict(),
  'approval.respond': z.object({ commandId, threadId: id, approvalId: id, decision: z.enum(['once', 'always', 'deny', 'approve']).describe('`once`: run this call; `always`: run it, and allow this very call (its exact subject) in this thread from now on; `deny`: refuse it (the note reaches the model); `approve` is `once`'), note: z.string().max(2_000).nullable().default(null) }).strict(),
  'approval.list': z
    .object({
      threadId: id.optional(),
      limit: z.number().int().min(1).max(1_000).default(100),
      cursor: z.string().max(400).optional().describe('`nextCursor` of the previous page'),
    })
    .strict(),
  'checkpoint.list': z.object({ threadId: id }).strict(),
  'checkpoint.diff': z
    .object({
      threadId: id,
      checkpointId: id.describe('A turn id: its diff, from before its first change to its end'),
      path: z.string().min(1).max(4_096).optional().describe('Only this file'),
    })
    .strict(),
  'checkpoint.revert': z
    .object({
      commandId,
      threadId: id,
      checkpointId: id.describe('A turn id: what it and every later turn still standing changed goes back to how it was before them; nothing else is touched'),
      force: z.boolean().default(false).describe('Revert files changed since those turns too (refused with conflict otherwise); the work tree is saved before any revert'),
    })
    .strict(),
  'session.stop': z.object({ commandId, threadId: id, reason: z.string().max(1_000).default('stopped by the user') }).strict(),
  'worker.list': z.object({}).strict(),
  'auth.whoami': z.object({}).strict(),
  health: z.object({}).strict(),
} as const;

export type ApiMethod = keyof typeof apiParams;
/** What a caller sends (defaults may be left out). */
export type ApiParamsIn<M extends ApiMethod> = z.input<(typeof apiParams)[M]>;
/** What a handler receives, defaults filled in. */
export type ApiParams<M extends ApiMethod> = z.output<(typeof apiParams)[M]>;

export const apiMethods = Object.keys(apiParams) as ApiMethod[];

export const isApiMethod = (name: string): name is ApiMethod => Object.hasOwn(apiParams, name);

/** Methods that write through a command id: the same id sent again gets the first answer, so a caller may always ask again. */
export const commandMethods: ReadonlySet<ApiMethod> = new Set(apiMethods.filter((method) => { const schema = apiParams[method]; return schema instanceof z.ZodObject && 'commandId' in schema.shape; }));
