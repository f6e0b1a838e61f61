import { randomUUID } from 'node:crypto';
import { isInbox } from '../../bus/index.ts';
import { type ListedThread, type ProviderChoice, TurnloomError, defaultPermissions, fitEvent, jsonBytes, summarizeChanges } from '../../domain/index.ts';
import { runRevert } from './revertFlow.ts';
import type { WorkerDirectory } from './workerDirectory.ts';
import { startOutcome } from '../engine/turnQueue.ts';
import { derivedId } from '../engine/commands.ts';
import { patchOfFile } from './checkpointPatch.ts';
import type { Engine, SubmitOptions } from '../engine/engine.ts';
import { mayUse, readableThread, requireApprovalInAdvance, requireThread } from './access.ts';
import { type ApiResults, EVENT_ENVELOPE_BYTES, type PendingApproval, type WireEvent } from '../../protocol/apiResults.ts';
import type { ApiMethod, ApiParams } from '../../protocol/apiSchemas.ts';
import { type Principal, type Scope, scopes } from './auth.ts';
import { decodeCursor, decodePosition, encodeCursor, takePage } from './paging.ts';
import type { ThreadWatches } from './threadWatches.ts';
import { olderTurns, threadWindow } from './threadWindow.ts';
import type { TurnTelemetry } from './turnTelemetry.ts';

export interface ApiContext {
  engine: Engine;
  principal: Principal;
  /** Where the caller's answer goes: an inbox in its own inbox space (the server answers no other). */
  replyTo: string;
  watches: ThreadWatches;
  /** The workers the engine hears from: for `worker.list`, and to say whether an open turn waits for one. */
  workers: WorkerDirectory;
  defaultProvider: ProviderChoice;
  /** The provider choice of each agent that names one, for turns that name the agent and no provider. */
  agentProviders: Readonly<Record<string, ProviderChoice>>;
  /** Provider names this server runs turns with; `null` when turns run elsewhere (any name may be served). */
  providers: readonly string[] | null;
  /** How many bytes of events one answer may carry, so every page fits the bus's payload limit. */
  replyBudgetBytes: number;
  service: { name: string; version: string; instance: string; startedAt: number };
  /** In a cluster: what `health` shows of it (engines, owned threads, the log). */
  cluster?: () => Record<string, unknown>;
  /** Traces and metrics of turns (see `turnTelemetry.ts`). */
  telemetry?: TurnTelemetry;
  /** The trace the request came in (its `traceparent` header). */
  traceparent?: string;
}


interface Handler<M extends ApiMethod> {
  /** `null`: anyone may call it (health); `any`: any principal a token names, whatever its scopes. */
  scope: Scope | 'any' | null;
  handle(context: ApiContext, params: ApiParams<M>): Promise<ApiResults[M]>;
}

const commandIdOf = (params: { commandId?: string | undefined }) => params.commandId ?? randomUUID();
/** Only a command id the client chose can come back in a retry, so only its rejection is kept. */
const idOrigin = (params: { commandId?: string | undefined }): SubmitOptions => ({ clientCommandId: params.commandId !== undefined });

function* filter<T>(items: Iterable<T>, keep: (item: T) => boolean): Iterable<T> {
  for (const item of items) if (keep(item)) yield item;
}

/** Two newest-first listings as one. */
function* newestOfBoth(a: Iterable<ListedThread>, b: Iterable<ListedThread>): Iterable<ListedThread> {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  let x = left.next();
  let y = right.next();
  while (!x.done || !y.done) {
    if (y.done || (!x.done && x.value.position > y.value.position)) {
      yield x.value;
      x = left.next();
    } else {
      yield y.value;
      y = right.next();
    }
  }
}

/** What a principal sees listed: every thread for an admin; otherwise its own and those that belong to nobody. */
function visibleThreads(engine: Engine, principal: Principal, before: number | null): Iterable<ListedThread> {
  if (principal.scopes.has('admin')) return engine.threadsNewestFirst(before);
  return newestOfBoth(engine.threadsNewestFirst(before, principal.name), engine.threadsNewestFirst(before, null));
}

/** The inbox prefix (first token) of a subject: which connection, and so which NATS user, it belongs to. */
const inboxOwner = (subject: string) => subject.slice(0, subject.indexOf('.') + 1);

/**
 * A thread and its children (and theirs) that have an open turn, sorted:
 * a child's approvals are asked on its parent's behalf, so whoever follows
 * the parent answers them.
 */
async function withOpenChildren(engine: Engine, threadId: string, open: ReadonlySet<string>): Promise<string[]> {
  const found = new Set<string>();
  const visit = async (id: string): Promise<void> => {
    if (found.has(id) || !engine.summary(id)) return;
    if (open.has(id)) found.add(id);
    const view = await engine.getThread(id);
    const turn = view.openTurnId ? view.turns[view.openTurnId] : undefined;
    for (const part of turn?.messages[1].parts ?? []) if (part.task?.status === 'running') await visit(part.task.childThreadId);
  };
  await visit(threadId);
  return [...found].sort();
}

export const apiHandlers: { [M in ApiMethod]: Handler<M> } = {
  'thread.create': {
    scope: 'operate',
    handle: ({ engine, principal }, params) => {
      requireApprovalInAdvance(principal, 'thread.create', defaultPermissions(), params);
      const commandId = commandIdOf(params);
      const threadId = params.threadId ?? derivedId('thr', commandId);
      return engine.submit(
        {
          type: 'thread.create',
          commandId,
          threadId,
          title: params.title,
          workspace: params.workspace,
          owner: principal.name,
          environment: params.environment,
          permissions: { mode: params.mode, rules: params.rules },
          compaction: params.compaction,
          ...(params.agent ? { agent: params.agent } : {}),
        },
        idOrigin(params),
      );
    },
  },
  'thread.rename': {
    scope: 'operate',
    handle: async ({ engine, principal }, params) => {
      requireThread(engine, principal, params.threadId);
      return engine.submit({ type: 'thread.rename', commandId: commandIdOf(params), threadId: params.threadId, title: params.title }, idOrigin(params));
    },
  },
  'thread.configure': {
    scope: 'operate',
    handle: async ({ engine, principal }, params) => {
      requireApprovalInAdvance(principal, 'thread.configure', (await readableThread(engine, principal, params.threadId)).permissions, params);
      return engine.submit(
        { type: 'thread.configure', commandId: commandIdOf(params), threadId: params.threadId, mode: params.mode ?? null, rules: params.rules ?? null, compaction: params.compaction ?? null, ...(params.agent ? { agent: params.agent } : {}) },
        idOrigin(params),
      );
    },
  },
  'thread.archive': {
    scope: 'admin',
    handle: async ({ engine, principal }, params) => {
      requireThread(engine, principal, params.threadId);
      return engine.submit({ type: 'thread.archive', commandId: commandIdOf(params), threadId: params.threadId }, idOrigin(params));
    },
  },
  'thread.list': {
    scope: 'read',
    handle: async ({ engine, principal, replyBudgetBytes }, params) => {
      const before = params.cursor === undefined ? null : decodePosition('threads', params.cursor);
      const listed = filter(visibleThreads(engine, principal, before), ({ summary }) => params.includeArchived || !summary.archived);
      const { page, more } = takePage(listed, params.limit, replyBudgetBytes, ({ summary }) => jsonBytes(summary));
      return { threads: page.map(({ summary }) => summary), nextCursor: more ? encodeCursor('threads', page.at(-1)!.position) : null };
    },
  },
  'thread.get': {
    scope: 'read',
    handle: async ({ engine, principal, workers, replyBudgetBytes }, params) => {
      const view = await readableThread(engine, principal, params.threadId);
      const open = view.openTurnId === null ? undefined : view.turns[view.openTurnId];
      const work = open ? { turnId: open.id, environment: view.environment, heldBy: open.lease?.workerId ?? null, liveWorkers: workers.liveWorkers(view.environment) } : null;
      return { ...threadWindow(view, params.turns, replyBudgetBytes), seq: view.seq, work };
    },
  },
  'thread.turns': {
    scope: 'read',
    handle: async ({ engine, principal, replyBudgetBytes }, params) => {
      const view = await readableThread(engine, principal, params.threadId);
      return olderTurns(view, decodePosition('turns', params.before), params.limit, replyBudgetBytes);
    },
  },
  'thread.events': {
    scope: 'read',
    handle: async ({ engine, principal, replyBudgetBytes }, params) => {
      const lastSeq = (await readableThread(engine, principal, params.threadId)).seq;
      // An event stored under a larger limit than this server's still travels, cut with a note: no reader is ever locked out.
      const fitted = engine.readEvents(params.threadId, params.after, params.limit).map((stored): WireEvent => {
        const { value, cut } = fitEvent(stored.event, replyBudgetBytes - EVENT_ENVELOPE_BYTES);
        return cut ? { ...stored, event: value, cut: true } : stored;
      });
      return { events: takePage(fitted, params.limit, replyBudgetBytes).page, lastSeq };
    },
  },
  'thread.watch': {
    scope: 'read',
    handle: async ({ engine, principal, replyTo, watches }, params) => {
      requireThread(engine, principal, params.threadId);
      // Deliveries go to the caller's own inbox space (the one its answers may go to, so that of its reply), never to a subject someone else reads.
      if (!isInbox(params.deliverTo) || inboxOwner(params.deliverTo) !== inboxOwner(replyTo)) {
        throw new TurnloomError('forbidden', `deliverTo must be an inbox in the caller's own inbox space (${inboxOwner(replyTo)}…)`, { deliverTo: params.deliverTo });
      }
      return watches.watch(principal.name, params.threadId, params.deliverTo, params.watchId);
    },
  },
  'thread.unwatch': {
    scope: 'read',
    handle: async ({ principal, watches }, params) => ({ removed: await watches.unwatch(principal.name, params.watchId) }),
  },
  'turn.start': {
    scope: 'operate',
    handle: async ({ engine, principal, workers, defaultProvider, agentProviders, providers, telemetry, traceparent }, params) => {
      if (params.mode) requireApprovalInAdvance(principal, 'turn.start', (await readableThread(engine, principal, params.threadId)).permissions, params);
      else requireThread(engine, principal, params.threadId);
      workers.admitTurn();
      if (params.provider && providers && !providers.includes(params.provider.name)) {
        throw new TurnloomError('invalid_payload', `unknown provider "${params.provider.name}"; this server runs ${providers.join(', ')}`, {
          provider: params.provider.name,
          providers,
        });
      }
      const commandId = commandIdOf(params);
      const turnId = params.turnId ?? derivedId('turn', commandId);
      const trace = telemetry?.startTurn(params.threadId, turnId, traceparent);
      let result;
      try {
        result = await engine.submit(
          {
            type: 'turn.start',
            commandId,
            threadId: params.threadId,
            turnId,
            input: params.input,
            provider: params.provider ?? (params.agent && Object.hasOwn(agentProviders, params.agent) ? agentProviders[params.agent]! : defaultProvider),
            mode: params.mode ?? null,
            ...(params.agent ? { agent: params.agent } : {}),
            ...(params.whileRunning ? { whileRunning: params.whileRunning } : {}),
            ...(trace ? { trace } : {}),
          },
          idOrigin(params),
        );
      } catch (error) {
        telemetry?.noTurn(params.threadId, turnId, error instanceof Error ? error.message : String(error), true);
        throw error;
      }
      const written = engine.readEvents(params.threadId, result.fromThreadSeq - 1, result.toThreadSeq - result.fromThreadSeq + 1).map(({ event }) => event);
      const outcome = startOutcome(written, turnId);
      // A retry answered from its receipt made no turn now; input steered into the open turn is no turn of its own.
      if (outcome.inbox === 'steered' || written.length === 0) telemetry?.noTurn(params.threadId, turnId, outcome.inbox);
      return { ...result, ...outcome };
    },
  },
  'turn.interrupt': {
    scope: 'operate',
    handle: async ({ engine, principal }, params) => {
      requireThread(engine, principal, params.threadId);
      return engine.submit(
        { type: 'turn.interrupt', commandId: commandIdOf(params), threadId: params.threadId, turnId: params.turnId ?? null, reason: params.reason },
        idOrigin(params),
      );
    },
  },
  'approval.respond': {
    scope: 'approve',
    // Who decided is the authenticated principal, never a field the caller could forge.
    handle: async ({ engine, principal }, params) => {
      requireThread(engine, principal, params.threadId);
      return engine.submit(
        { type: 'approval.respond', commandId: commandIdOf(params), threadId: params.threadId, approvalId: params.approvalId, decision: params.decision === 'once' ? 'approve' : params.decision, by: principal.name, note: params.note },
        idOrigin(params),
      );
    },
  },
  'approval.list': {
    scope: 'read',
    handle: async ({ engine, principal, replyBudgetBytes }, params) => {
      if (params.threadId) requireThread(engine, principal, params.threadId);
      const after = params.cursor === undefined ? null : decodeCursor('approvals', params.cursor);
      // Pending approvals only live in open turns, so only those threads are read, in thread order; a thread's own list holds its children's too.
      const open = new Set(engine.listOpenTurns().map(({ threadId }) => threadId));
      const threadIds = params.threadId
        ? await withOpenChildren(engine, params.threadId, open)
        : [...open].filter((threadId) => mayUse(principal, engine.summary(threadId)?.owner ?? null)).sort();
      const items: Array<PendingApproval & { key: string }> = [];
      for (const threadId of threadIds) {
        const thread = await engine.getThread(threadId);
        const marked = thread.parent && threadId !== params.threadId ? { parentThreadId: thread.parent.threadId } : {};
        for (const turnId of thread.turnIds) {
          for (const approval of thread.turns[turnId]!.approvals) {
            const key = `${threadId}/${approval.id}`;
            if (approval.state === 'pending' && (after === null || key > after)) items.push({ ...approval, threadId, turnId, ...marked, key });
          }
        }
      }
      items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const { page, more } = takePage(items, params.limit, replyBudgetBytes);
      return { approvals: page.map(({ key: _key, ...approval }) => approval), nextCursor: more ? encodeCursor('approvals', page.at(-1)!.key) : null };
    },
  },
  'checkpoint.list': {
    scope: 'read',
    handle: async ({ engine, principal }, params) => {
      const view = await readableThread(engine, principal, params.threadId);
      const checkpoints = view.turnIds.flatMap((turnId) => {
        const { checkpoint, revertedAt } = view.turns[turnId]!;
        if (!checkpoint) return [];
        const { files, filesChanged, additions, deletions, filesOmitted } = checkpoint.diff ?? summarizeChanges([]);
        return [{ checkpointId: turnId, turnId, before: checkpoint.before, after: checkpoint.after, files, filesChanged, additions, deletions, filesOmitted, revertedAt }];
      });
      return { checkpoints, off: view.checkpointsOff };
    },
  },
  'checkpoint.diff': {
    scope: 'read',
    // Served from the log: what the turn changed was recorded when it ended, so no worker (or git) is needed to show it.
    handle: async ({ engine, principal }, params) => {
      const view = await readableThread(engine, principal, params.threadId);
      const diff = view.turns[params.checkpointId]?.checkpoint?.diff;
      if (!diff) throw new TurnloomError('not_found', `no diff for ${params.checkpointId}: not a turn of this thread, or it changed no files, or it has not ended`, { checkpointId: params.checkpointId });
      if (params.path === undefined) return { checkpointId: params.checkpointId, ...diff };
      const file = diff.files.find((candidate) => candidate.path === params.path || candidate.oldPath === params.path);
      if (!file) {
        const unlisted = diff.filesOmitted > 0 ? `, or among the ${diff.filesOmitted} files it changed that the log does not list` : '';
        throw new TurnloomError('not_found', `turn ${params.checkpointId} did not change ${params.path}${unlisted}`, { checkpointId: params.checkpointId, path: params.path, filesOmitted: diff.filesOmitted });
      }
      const patch = patchOfFile(diff, file);
      return { checkpointId: params.checkpointId, ...summarizeChanges([file]), patch: patch ?? '', truncated: patch === null };
    },
  },
  'checkpoint.revert': {
    scope: 'operate',
    // The log holds the revert before any file changes (and so the thread, which no turn may take meanwhile); the files live with the workers.
    handle: async ({ engine, principal, workers }, params) => {
      await readableThread(engine, principal, params.threadId);
      const started = await engine.submit({ type: 'checkpoint.revert', commandId: commandIdOf(params), threadId: params.threadId, turnId: params.checkpointId, by: principal.name }, idOrigin(params));
      const event = engine.readEvents(params.threadId, started.fromThreadSeq - 1, 1)[0]?.event;
      if (event?.type !== 'checkpoint.revertStarted') throw new TurnloomError('internal', `checkpoint.revert wrote ${event?.type ?? 'nothing'}`);
      return runRevert(engine, workers, params.threadId, event, params.force);
    },
  },
  'session.stop': {
    scope: 'operate',
    handle: async ({ engine, principal }, params) => {
      requireThread(engine, principal, params.threadId);
      return engine.submit({ type: 'session.stop', commandId: commandIdOf(params), threadId: params.threadId, reason: params.reason }, idOrigin(params));
    },
  },
  'worker.list': {
    scope: 'read',
    handle: async ({ workers }) => ({ workers: workers.workers() }),
  },
  'auth.whoami': {
    scope: 'any',
    handle: async ({ principal }) => ({ principal: principal.name, scopes: scopes.filter((scope) => principal.scopes.has(scope)) }),
  },
  health: {
    scope: null,
    handle: async ({ engine, service, cluster }) => ({
      status: 'ok',
      service: service.name,
      version: service.version,
      instance: service.instance,
      uptimeMs: Date.now() - service.startedAt,
      loadedThreads: engine.loadedThreadCount,
      ...(cluster ? { cluster: cluster() } : {}),
    }),
  },
};
