import { afterEach, describe, expect, inject, it } from 'vitest';
import { MSGPACK, decode } from '../../bus/index.ts';
import type { BusMessage, Inspection } from '../../domain/index.ts';
import { IllegalTransition } from '../../domain/index.ts';
import { type WorkspaceFixture, openWorkspaceFixture, toolSteps } from '../workspace/workspaceFixture.ts';
import { createThread, openEngineFixture, record, startTurn, turnEvents } from '../support/engineFixture.ts';

let ws: WorkspaceFixture | undefined;
afterEach(async () => {
  await ws?.dispose();
  ws = undefined;
});

/** Every inspection record published for one thread, on its own subject of a real nats-server. */
async function listen(w: WorkspaceFixture, threadId: string): Promise<{ records: Inspection[]; subjects: string[] }> {
  const bus = await w.fx.connect();
  const records: Inspection[] = [];
  const subjects: string[] = [];
  bus.subscribe(w.client.subjects.inspect(threadId), (message: BusMessage) => {
    subjects.push(message.subject);
    const record = decode(message.data, MSGPACK) as Inspection;
    expect(message.headers['turnloom-seq']).toBe(String(record.threadSeq));
    records.push(record);
  });
  await bus.flush();
  return { records, subjects };
}

describe('inspection records on <p>.v1.inspect.<threadId>', () => {
  it('carry what each machine did, in log order, from creation to the final state, and only for their thread', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'echo hi' } }), { natsUrl: inject('natsUrl') });
    const { threadId } = await ws.client.call('thread.create', {});
    const other = await ws.client.call('thread.create', {});
    const { records, subjects } = await listen(ws, threadId);
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'say hi' } });
    await ws.client.call('turn.start', { threadId: other.threadId, input: { text: 'elsewhere' } });
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
    const [approval] = (await ws.client.call('approval.list', { threadId })).approvals;
    await ws.client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'once' });
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
    const { events } = await ws.client.call('thread.events', { threadId, after: 0 });
    await expect.poll(() => records.at(-1)?.threadSeq, { timeout: 10_000 }).toBe(events.at(-1)!.threadSeq);

    expect(new Set(subjects)).toEqual(new Set([ws.client.subjects.inspect(threadId)]));
    expect(records.every((record) => record.threadId === threadId && record.outcome === 'accepted')).toBe(true);
    const transitions = records.flatMap((record) => record.transitions);
    // Each transition names the stored event that caused it, and the log order holds.
    const typeAt = new Map(events.map((stored) => [stored.threadSeq, stored.event.type]));
    for (const transition of transitions) expect(transition.domainEvent).toBe(typeAt.get(transition.threadSeq));
    expect(transitions.map((transition) => transition.threadSeq)).toEqual([...transitions.map((transition) => transition.threadSeq)].sort((a, b) => a - b));

    // The turn's own path, as the machine walked it: each step starts where the last one ended.
    const turnPath = transitions.filter((transition) => transition.machine === 'turn' && transition.actorId === turnId);
    expect(turnPath[0]).toMatchObject({ from: null, event: '(created)', to: 'requested', domainEvent: 'turn.requested' });
    for (let index = 1; index < turnPath.length; index += 1) expect(turnPath[index]!.from).toBe(turnPath[index - 1]!.to);
    expect(turnPath.map((transition) => transition.to)).toContain('running.awaitingApproval');
    expect(turnPath.find((transition) => transition.from === 'running.awaitingApproval')).toMatchObject({ event: 'approval.granted', to: 'running.runningTools' });
    expect(turnPath.at(-1)).toMatchObject({ from: 'running.betweenSteps', event: 'turn.completed', to: 'completed' });
    const approvalPath = transitions.filter((transition) => transition.machine === 'approval').map((transition) => [transition.from, transition.event, transition.to]);
    expect(approvalPath).toEqual([
      [null, '(created)', 'pending'],
      ['pending', 'approval.granted', 'approved'],
      ['approved', 'approval.consumed', 'consumed'],
    ]);
    // The thread's final states are the ones the records ended in.
    const { thread } = await ws.client.call('thread.get', { threadId });
    const last = (machine: string, id: string) => transitions.filter((transition) => transition.machine === machine && transition.actorId === id).at(-1)?.to;
    expect(last('session', 'session')).toBe(thread.session.state);
    for (const part of thread.turns[turnId]!.messages[1].parts) expect(last('part', part.id)).toBe(part.state);
  });

  it('a command a machine refuses writes nothing and is published as rejected, with the machine’s reason', async () => {
    ws = await openWorkspaceFixture(toolSteps({ name: 'bash', input: { command: 'echo hi' } }), { natsUrl: inject('natsUrl') });
    const { threadId } = await ws.client.call('thread.create', {});
    const { records } = await listen(ws, threadId);
    const { turnId } = await ws.client.call('turn.start', { threadId, input: { text: 'say hi' } });
    await expect.poll(async () => (await ws!.client.call('approval.list', { threadId })).approvals.length, { timeout: 15_000 }).toBe(1);
    const [approval] = (await ws.client.call('approval.list', { threadId })).approvals;
    await ws.client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'once' });
    const before = (await ws.client.call('thread.get', { threadId })).seq;
    const error = await ws.client.call('approval.respond', { threadId, approvalId: approval!.id, decision: 'deny' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(IllegalTransition);
    expect((error as IllegalTransition).actorId).toBe(approval!.id);
    await expect.poll(() => records.find((record) => record.outcome === 'rejected'), { timeout: 10_000 }).toBeDefined();
    const rejected = records.find((record) => record.outcome === 'rejected')!;
    expect(rejected).toMatchObject({ command: 'approval.respond', transitions: [] });
    expect(rejected.threadSeq).toBeGreaterThanOrEqual(before);
    expect(rejected.refused).toHaveLength(1);
    const [refusal] = rejected.refused;
    expect(refusal).toMatchObject({ machine: 'approval', actorId: approval!.id, event: 'approval.denied' });
    // The reason is the machine's: the refusal, what the state means, and what it would take instead.
    expect(refusal!.reason).toMatch(/^approval in state "(approved|consumed)" does not accept "approval.denied"/);
    expect(refusal!.reason).toMatch(/accepts|final/);
    expect((await ws.settled(threadId, turnId)).state).toBe('completed');
  });
});

describe('inspection records from the engine', () => {
  it('a worker’s output the machines refuse is listed as refused in the accepted record, beside what they did take', async () => {
    const fx = await openEngineFixture();
    try {
      const records: Inspection[] = [];
      fx.engine.onInspection((inspection) => records.push(inspection));
      const t = turnEvents('t1');
      await fx.engine.submit(createThread('th1'));
      await fx.engine.submit(startTurn('th1', 't1'));
      await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.started(), t.step(1), ...t.text('p1', 1, 'hi'), t.stepFinished(1), t.completed()]));
      const last = records.at(-1)!;
      expect(last).toMatchObject({ outcome: 'accepted', command: 'turn.record', threadSeq: (await fx.engine.getThread('th1')).seq });
      expect(last.refused).toEqual([
        expect.objectContaining({ machine: 'turn', actorId: 't1', state: 'running.betweenSteps', event: 'turn.started' }),
      ]);
      expect(last.refused[0]!.reason).toContain('turn in state "running.betweenSteps" does not accept "turn.started": No step is open');
      expect(last.transitions.filter((transition) => transition.machine === 'part').map((transition) => transition.to)).toEqual(['running.content', 'running.content', 'completed']);
      // A refusal that is not a machine's (a thread created twice: `conflict`) is no inspection record.
      const count = records.length;
      await expect(fx.engine.submit(createThread('th1'))).rejects.toMatchObject({ code: 'conflict' });
      expect(records).toHaveLength(count);
    } finally {
      await fx.dispose();
    }
  });
});
