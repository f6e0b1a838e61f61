import { randomUUID } from 'node:crypto';
import { type DomainEvent, type ProviderAdapter, type ProviderErrorInfo, type ProviderRequest, type RequestContext, type ToolSpec } from '../../domain/index.ts';
import { type HeaderFields, deriveMessages, headerDigest, requestDigest } from '../runtime/deriveRequest.ts';
import { renderSystemPrompt } from '../runtime/systemPrompt.ts';
import { turnAgent } from './turnAgent.ts';
import { compactContext } from './compaction.ts';
import { reachWritten } from './reachWritten.ts';
import type { TurnWork } from './turnWork.ts';
import { type HookContext, TurnRejected, runHook } from './turnHooks.ts';

const hookActivity = (turnId: string, name: string, message: string, data: Record<string, unknown>): DomainEvent => ({
  type: 'activity.recorded',
  turnId,
  kind: 'hook',
  message: `hook ${name} ${message}`,
  data: { hook: name, ...data },
});

function contextOf(work: TurnWork, adapter: ProviderAdapter, step: number): () => HookContext {
  return () => ({
    threadId: work.threadId,
    turnId: work.turnId,
    step,
    view: work.fold.context.view!,
    signal: work.signal,
    compact: (reason) => compactContext(work, adapter, step, reason, work.options.compaction),
  });
}

/**
 * The request of step `step`: the `preStep` waterfall first (a hook may
 * refuse the turn, or replace what the model reads, which is recorded and
 * read back from the log), then the conversation the log derives and the
 * system prompt rendered from the turn's recorded context, then the
 * `request` waterfall (model, parameters, tools; each change noted). The
 * header is recorded when it differs from the log's latest; `digest` covers
 * the whole request, for the engine to check against its log.
 */
export async function prepareRequest(work: TurnWork, adapter: ProviderAdapter, tools: ToolSpec[], step: number, turnContext: RequestContext): Promise<{ request: ProviderRequest; digest: string; header: DomainEvent[] }> {
  const { turnId, outbox, hooks } = work;
  const context = contextOf(work, adapter, step);
  const view = () => work.fold.context.view!;
  // Derived once, and again only after a hook wrote to the log (a replacement, a compaction): a step's conversation can be long.
  let messages = deriveMessages(view());
  for (const hook of hooks.preStep ?? []) {
    const written = outbox.lastSeq;
    const decision = await runHook('preStep', hook, () => hook.run(context(), messages));
    if (decision && 'reject' in decision) {
      await outbox.record([hookActivity(turnId, hook.name, `rejected the turn: ${decision.reject}`, { decision: 'reject', reason: decision.reject })]);
      throw new TurnRejected(hook.name, decision.reject);
    }
    if (decision) {
      await outbox.record([{ type: 'context.replaced', turnId, step, messages: decision.replace, by: hook.name, reason: decision.reason }]);
      await reachWritten(work);
    }
    if (outbox.lastSeq !== written) messages = deriveMessages(view());
  }
  const provider = view().turns[turnId]!.provider;
  let request: ProviderRequest = { model: provider.model, system: renderSystemPrompt(turnContext, turnAgent(work).profile, tools), messages, tools };
  for (const hook of hooks.request ?? []) {
    const changed = await runHook('request', hook, () => hook.run(context(), request));
    if (!changed || changed === request) continue;
    await outbox.record([
      hookActivity(turnId, hook.name, 'changed the request', { model: changed.model, tools: changed.tools.map((tool) => tool.name), systemChanged: changed.system !== request.system }),
    ]);
    request = changed;
  }
  const header: HeaderFields = { provider: provider.name, model: request.model, system: request.system, tools: request.tools, params: { ...adapter.parameters } };
  const digest = headerDigest(header);
  // Compared with the digest the log's header was recorded with: a header edited in the log since is not taken as ours, and the engine's check refuses the call.
  const changed: DomainEvent[] = view().header?.digest === digest ? [] : [{ type: 'request.header', turnId, step, header: { ...header, digest } }];
  return { request, digest: requestDigest(header, request.messages), header: changed };
}

/** The `requestError` waterfall after a failed model call: `true` when a hook asked to run the step again now. */
export async function retryAfterError(work: TurnWork, adapter: ProviderAdapter, step: number, error: ProviderErrorInfo, attempt: number): Promise<boolean> {
  const context = contextOf(work, adapter, step);
  for (const hook of work.hooks.requestError ?? []) {
    await reachWritten(work);
    if ((await runHook('requestError', hook, () => hook.run(context(), error, attempt))) !== 'retry') continue;
    await work.outbox.record([hookActivity(work.turnId, hook.name, `asked to retry after ${error.kind}`, { decision: 'retry', error: error.kind, attempt })]);
    return true;
  }
  return false;
}

/** The `turnStopping` listeners, one after another; each may steer input in, which the inbox then decides on. */
export async function turnStopping(work: TurnWork, adapter: ProviderAdapter, step: number): Promise<void> {
  const hooks = work.hooks.turnStopping ?? [];
  if (hooks.length === 0) return;
  const context = contextOf(work, adapter, step);
  // The listeners see the answer that just ended, as the log has it.
  await reachWritten(work);
  for (const hook of hooks) {
    const steer = async (text: string) => {
      await work.outbox.record([{ type: 'input.steered', turnId: work.turnId, inputId: `hook-${randomUUID()}`, text }, hookActivity(work.turnId, hook.name, 'steered input in', { decision: 'steer' })]);
    };
    await runHook('turnStopping', hook, () => hook.run({ ...context(), steer }));
  }
  await reachWritten(work);
}
