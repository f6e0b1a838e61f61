import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Command } from '../../services/engine/commands.ts';
import { type DomainEvent, type ThreadView, TurnloomError, isOpenPart } from '../../domain/index.ts';
import { stateName } from '../../machines/strictSend.ts';
import { openEngineFixture, rebuildFromLog } from '../support/engineFixture.ts';

/**
 * An abstract step, made concrete against the thread as it is at that moment.
 * Most steps follow the turn forward (so runs get deep into steps, tools and
 * approvals); `noise` steps are anything at all, legal or not.
 */
type Op = { noise: boolean; kind: string; a: number; b: number };

const eventKinds = [
  'session.started', 'session.failed', 'session.stopped', 'turn.started', 'step.started', 'step.finished',
  'response.started', 'response.completed', 'text', 'delta', 'part.completed', 'tool', 'tool.inputReady', 'tools.started', 'tool.executing', 'tool.result',
  'tool.failed', 'part.failed', 'part.interrupted', 'approval.requested', 'approval.consumed', 'approval.undelivered',
  'turn.completed', 'turn.failed', 'turn.interrupted',
] as const;
const clientKinds = ['turn.start', 'turn.interrupt', 'approve', 'deny', 'expire', 'session.stop', 'turn.settle', 'turn.fail', 'session.confirmStopped', 'turn.repair', 'rename'] as const;

const opArb: fc.Arbitrary<Op> = fc.record({
  noise: fc.boolean().chain((coin) => (coin ? fc.boolean() : fc.constant(false))),
  kind: fc.constantFrom<string>(...eventKinds, ...clientKinds),
  a: fc.nat(7),
  b: fc.nat(7),
});

function pick<T>(items: readonly T[], index: number): T | undefined {
  return items.length === 0 ? undefined : items[index % items.length];
}


/** What would move the open turn forward from where it stands. */
function plausible(view: ThreadView): string[] {
  const turn = view.openTurnId ? view.turns[view.openTurnId]! : undefined;
  if (!turn) return ['turn.start'];
  const open = turn.messages[1].parts.filter(isOpenPart);
  if (turn.state === 'requested') return view.session.state === 'starting' ? ['session.started'] : ['turn.started'];
  if (turn.state.startsWith('interrupting')) return ['turn.settle', 'part.interrupted', 'step.finished', 'turn.interrupted'];
  switch (turn.state) {
    case 'running.betweenSteps': return ['step.started', 'step.started', 'turn.completed'];
    case 'running.requesting': return ['response.started', 'text', 'tool', 'step.finished'];
    case 'running.responded': return ['tools.started', 'tools.started', 'step.finished'];
    case 'running.awaitingApproval': return ['approve', 'approve', 'deny', 'expire', 'turn.interrupt'];
    case 'running.runningTools':
      if (open.some((part) => part.state === 'running.tool.executing')) return ['tool.result', 'tool.failed'];
      return open.length > 0 ? ['approval.requested', 'tool.executing'] : ['step.finished', 'approval.consumed'];
    default:
      if (open.some((part) => part.state.startsWith('running.tool.inputStreaming'))) return ['delta', 'tool.inputReady', 'tool.inputReady'];
      if (open.some((part) => part.state === 'running.content')) return ['delta', 'delta', 'part.completed'];
      return open.length > 0 ? ['response.completed'] : ['text', 'tool', 'step.finished', 'response.completed', 'response.completed'];
  }
}

function concrete(op: Op, view: ThreadView, n: number): Command {
  if (!op.noise) op = { ...op, kind: pick(plausible(view), op.a)! };
  const turnIds = view.turnIds;
  const turnId = view.openTurnId ?? pick(turnIds, op.a) ?? 'none';
  const turn = view.turns[turnId];
  const parts = turn?.messages[1].parts ?? [];
  const openParts = parts.filter(isOpenPart);
  const part = pick(openParts.length > 0 ? openParts : parts, op.b);
  const partId = part?.id ?? `p${op.a}`;
  const callId = part?.tool?.callId ?? `c${op.b}`;
  const approval = pick(turn?.approvals.filter((candidate) => !op.noise === (candidate.state === 'pending' || candidate.state === 'approved' || candidate.state === 'denied')) ?? [], op.b);
  const step = view.cursor.openStep ?? (op.b % 3 === 0 ? view.cursor.lastStep : view.cursor.lastStep + 1);
  const base = { commandId: `op-${n}`, threadId: 'th' };
  const ev = (event: DomainEvent): Command => ({ ...base, type: 'turn.record', turnId, events: [event] });
  switch (op.kind) {
    case 'turn.start': return { ...base, type: 'turn.start', turnId: `t${n}`, input: { text: 'go' }, provider: { name: 'scripted', model: null } };
    case 'turn.interrupt': return { ...base, type: 'turn.interrupt', turnId: op.a % 2 ? turnId : null, reason: 'user' };
    case 'approve':
    case 'deny': return { ...base, type: 'approval.respond', approvalId: approval?.id ?? 'none', decision: op.kind === 'approve' ? 'approve' : 'deny', by: 'u', note: null };
    case 'expire': return { ...base, type: 'approval.expire', approvalId: approval?.id ?? 'none' };
    case 'session.stop': return { ...base, type: 'session.stop', reason: 'user' };
    case 'turn.settle': return { ...base, type: 'turn.settle', turnId, outcome: { kind: 'interrupted', cause: op.b % 2 ? 'provider' : 'deadline', reason: 'x' } };
    case 'turn.fail': return { ...base, type: 'turn.settle', turnId, outcome: { kind: 'failed', error: 'provider broke' } };
    case 'session.confirmStopped': return { ...base, type: 'session.confirmStopped' };
    case 'turn.repair': return { ...base, type: 'turn.repair', turnId, reason: 'test' };
    case 'rename': return { ...base, type: 'thread.rename', title: `r${n}` };
    case 'session.started': return ev({ type: 'session.started', providerSessionId: `ps${n}` });
    case 'session.failed': return ev({ type: 'session.failed', reason: 'x' });
    case 'session.stopped': return ev({ type: 'session.stopped' });
    case 'turn.started': return ev({ type: 'turn.started', turnId });
    case 'step.started': return ev({ type: 'step.started', turnId, step, digest: null });
    case 'step.finished': return ev({ type: 'step.finished', turnId, step, outcome: 'stop', finishReason: null, usage: { input: 1, output: 1, reasoning: 0, cacheRead: 0, cacheWrite: 0 }, error: null });
    case 'text': return ev({ type: 'part.started', turnId, partId: `p${n}`, step, kind: op.a % 2 ? 'text' : 'reasoning' });
    case 'tool': return ev({ type: 'part.started', turnId, partId: `p${n}`, step, kind: 'tool', toolCallId: `c${n}`, toolName: 'bash' });
    case 'delta': return ev(part?.tool ? { type: 'tool.inputDelta', turnId, partId, text: '{' } : { type: 'part.delta', turnId, partId, text: 'x' });
    case 'part.completed': return ev({ type: 'part.completed', turnId, partId, signature: null });
    case 'tool.inputReady': return ev({ type: 'tool.inputReady', turnId, partId, toolCallId: callId, input: {} });
    case 'response.started': return ev({ type: 'response.started', turnId, step, responseId: `r${n}`, model: 'm' });
    case 'response.completed': return ev({ type: 'response.completed', turnId, step, stopReason: op.a % 2 ? 'toolCalls' : 'stop', rawReason: null });
    case 'tools.started': return ev({ type: 'tools.started', turnId, step, toolCallIds: [callId] });
    case 'tool.executing': return ev({ type: 'tool.executing', turnId, partId, toolCallId: callId });
    case 'tool.result': return ev({ type: 'tool.result', turnId, partId, toolCallId: callId, output: 'ok' });
    case 'tool.failed': return ev({ type: 'tool.failed', turnId, partId, toolCallId: callId, error: 'bad' });
    case 'part.failed': return ev({ type: 'part.failed', turnId, partId, error: 'bad' });
    case 'part.interrupted': return ev({ type: 'part.interrupted', turnId, partId, reason: 'x', tool: null });
    case 'approval.requested': return ev({ type: 'approval.requested', turnId, approvalId: `a${n}`, partId, toolCallId: callId, toolName: 'bash', input: {}, kind: 'command', subject: 'ls' });
    case 'approval.consumed': return ev({ type: 'approval.consumed', turnId, approvalId: approval?.id ?? 'none' });
    case 'approval.undelivered': return ev({ type: 'approval.undelivered', turnId, approvalId: approval?.id ?? 'none', reason: 'x' });
    case 'turn.completed': return ev({ type: 'turn.completed', turnId, stopReason: 'stop' });
    case 'turn.failed': return ev({ type: 'turn.failed', turnId, error: 'x' });
    default: return ev({ type: 'turn.interrupted', turnId, cause: 'provider', reason: 'x' });
  }
}

/** What the read model says every live actor should be in. */
function expectedLiveStates(view: ThreadView): Record<string, string> {
  const live: Record<string, string> = { 'session:session': view.session.state };
  const open = (state: string) => !['completed', 'failed', 'interrupted', 'error', 'cancelled', 'expired', 'consumed', 'undelivered'].includes(state);
  for (const turn of Object.values(view.turns)) {
    if (open(turn.state)) live[`turn:${turn.id}`] = turn.state;
    for (const part of turn.messages[1].parts) if (open(part.state)) live[`part:${part.id}`] = part.state;
    for (const approval of turn.approvals) if (open(approval.state)) live[`approval:${approval.id}`] = approval.state;
  }
  return live;
}

const liveNames = (states: Record<string, unknown> | undefined) =>
  Object.fromEntries(Object.entries(states ?? {}).map(([key, value]) => [key, stateName(value as never)]));

describe('consistency under random command sequences (property)', () => {
  it('keeps live actors, the stored read model and the fold of the log in agreement', async () => {
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60 }), async (ops) => {
        const fx = await openEngineFixture();
        try {
          await fx.engine.submit({ type: 'thread.create', commandId: 'create', threadId: 'th', title: 't', workspace: null, owner: null });
          for (const [n, op] of ops.entries()) {
            const view = await fx.engine.getThread('th');
            try {
              await fx.engine.submit(concrete(op, view, n));
              accepted += 1;
            } catch (error) {
              // Refusals are typed, never crashes.
              expect(error).toBeInstanceOf(TurnloomError);
              refused += 1;
            }
          }
          const view = await fx.engine.getThread('th');
          expect(fx.store.readView('th')).toEqual(view);
          expect(view).toEqual(rebuildFromLog(fx.store, 'th'));
          expect(liveNames(fx.engine.liveStates('th'))).toEqual(expectedLiveStates(view));
          expect(fx.engine.passivate('th')).toBe(true);
          await fx.engine.submit({ type: 'thread.rename', commandId: 'reload', threadId: 'th', title: 'reloaded' });
          expect(liveNames(fx.engine.liveStates('th'))).toEqual(expectedLiveStates(await fx.engine.getThread('th')));
        } finally {
          await fx.dispose();
        }
      }),
      { numRuns: 150 },
    );
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(10);
  }, 240_000);
});
