import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../domain/index.ts';
import type { Command } from '../../services/engine/commands.ts';
import { leaseKeyHash } from '../../services/engine/decide.ts';
import { deriveMessages, messagesDigest } from '../../services/runtime/deriveRequest.ts';
import { type EngineFixture, createThread, openEngineFixture, startTurn, turnEvents } from '../support/engineFixture.ts';

const t = turnEvents('t1');
let n = 0;
const KEY = 'a-key-only-the-worker-knows';
const lease = (workerId: string): Command => ({ type: 'turn.lease', commandId: `lease-${++n}`, threadId: 'th', turnId: 't1', workerId, keyHash: leaseKeyHash(KEY) });
const expire = (token: number, maxResumes = 2): Command => ({ type: 'turn.expireLease', commandId: `expire-${++n}`, threadId: 'th', turnId: 't1', token, reason: 'no heartbeat for 10 s', maxResumes });
const recordAs = (token: number, events: DomainEvent[], key = KEY): Command => ({
  type: 'turn.record',
  commandId: `record-${++n}`,
  threadId: 'th',
  turnId: 't1',
  lease: { token, key },
  events,
});

describe('leases and fencing', () => {
  let fx: EngineFixture;
  beforeEach(async () => {
    fx = await openEngineFixture();
    await fx.engine.submit(createThread('th'));
    await fx.engine.submit(startTurn('th', 't1'));
  });
  afterEach(async () => {
    await fx.dispose();
  });
  const turn = async () => (await fx.engine.getThread('th')).turns.t1!;

  it('gives a turn to one worker, whose token fences every record', async () => {
    const granted = await fx.engine.submit(lease('w1'));
    const token = granted.toThreadSeq;
    expect((await turn()).lease).toMatchObject({ workerId: 'w1', token });
    await expect(fx.engine.submit(lease('w2'))).rejects.toMatchObject({ code: 'conflict', details: { holder: 'w1' } });
    await fx.engine.submit(recordAs(token, [t.sessionStarted(), t.started()]));
    const seq = (await fx.engine.getThread('th')).seq;
    await expect(fx.engine.submit(recordAs(token + 1, [t.step(1)]))).rejects.toMatchObject({ code: 'fenced' });
    // The right token without the key is a guess, not a lease.
    await expect(fx.engine.submit(recordAs(token, [t.step(1)], 'a-guessed-key-0000'))).rejects.toMatchObject({ code: 'fenced' });
    expect((await fx.engine.getThread('th')).seq).toBe(seq);
    // Leases are the engine's to write.
    await expect(fx.engine.submit(recordAs(token, [{ type: 'turn.leased', turnId: 't1', workerId: 'w9', token: 99, keyHash: 'x' }]))).rejects.toMatchObject({ code: 'invalid_payload' });
  });

  it('closes the open step of a lost worker honestly when it was still streaming, and resumes the turn on another with a new token', async () => {
    const first = (await fx.engine.submit(lease('w1'))).toThreadSeq;
    await fx.engine.submit(recordAs(first, [t.sessionStarted(), t.started(), t.step(1), ...t.text('p1', 1, 'half'), ...t.toolCall('p2', 1, 'c1', {})]));
    await fx.engine.submit(expire(first));
    const lost = await turn();
    expect(lost.state).toBe('running.betweenSteps');
    expect(lost.lease).toBeNull();
    expect(lost.steps[0]).toMatchObject({ outcome: 'interrupted' });
    expect(lost.messages[1].parts.map((part) => [part.state, part.tool?.outcome ?? null])).toEqual([
      ['completed', null],
      ['interrupted', 'notStarted'],
    ]);
    expect(lost.activities.at(-1)!.message).toMatch(/worker w1 was lost/);
    // The lost worker's late writes change nothing.
    await expect(fx.engine.submit(recordAs(first, [t.result('p2', 'c1', 'too late')]))).rejects.toMatchObject({ code: 'fenced' });
    await expect(fx.engine.submit({ type: 'turn.settle', commandId: 'late-settle', threadId: 'th', turnId: 't1', lease: { token: first, key: KEY }, outcome: { kind: 'failed', error: 'x' } })).rejects.toMatchObject({ code: 'fenced' });

    const second = (await fx.engine.submit(lease('w2'))).toThreadSeq;
    expect(second).toBeGreaterThan(first);
    await fx.engine.submit(recordAs(second, [t.step(2), ...t.text('p4', 2, 'resumed'), t.responded(2, 'stop'), t.stepFinished(2), t.completed()]));
    expect((await turn()).state).toBe('completed');
  });

  it('keeps a step whose answer is complete for the next worker: a running call gets an unknown outcome, calls not started and their approvals wait', async () => {
    const first = (await fx.engine.submit(lease('w1'))).toThreadSeq;
    await fx.engine.submit(
      recordAs(first, [
        t.sessionStarted(),
        t.started(),
        t.step(1),
        ...t.toolCall('p1', 1, 'c1', {}),
        ...t.toolCall('p2', 1, 'c2', {}),
        ...t.toolCall('p3', 1, 'c3', {}),
        ...t.toolsStarted(1, ['c1', 'c2', 'c3']),
        t.executing('p1', 'c1'),
        t.result('p1', 'c1', 'done'),
        t.executing('p2', 'c2'),
      ]),
    );
    await fx.engine.submit(expire(first));
    const lost = await turn();
    expect(lost.state).toBe('running.runningTools');
    expect(lost.lease).toBeNull();
    expect(lost.steps[0]).toMatchObject({ outcome: null });
    expect(lost.messages[1].parts.map((part) => [part.state, part.tool?.outcome ?? null])).toEqual([
      ['completed', null],
      ['interrupted', 'unknown'],
      ['running.tool.inputReady', null],
    ]);
    expect(lost.activities.at(-1)!.message).toMatch(/remaining tool calls wait for another worker/);

    // The next worker takes the step up where it is and finishes it.
    const second = (await fx.engine.submit(lease('w2'))).toThreadSeq;
    await fx.engine.submit(recordAs(second, [t.executing('p3', 'c3'), t.result('p3', 'c3', 'ok'), t.stepFinished(1, 'toolCalls'), t.step(2), ...t.text('p4', 2, 'done'), t.responded(2, 'stop'), t.stepFinished(2), t.completed()]));
    const done = await turn();
    expect(done.state).toBe('completed');
    expect(done.steps.map((step) => step.outcome)).toEqual(['toolCalls', 'stop']);
  });

  it('fails a turn that lost its worker more often than it may be resumed', async () => {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const token = (await fx.engine.submit(lease(`w${attempt}`))).toThreadSeq;
      await fx.engine.submit(expire(token, 2));
    }
    expect(await turn()).toMatchObject({ state: 'failed', leases: 3, lease: null });
    expect((await turn()).error).toMatch(/lost its worker 3 times/);
  });

  it('settles an interrupted turn whose worker is lost, rather than resuming it', async () => {
    const token = (await fx.engine.submit(lease('w1'))).toThreadSeq;
    await fx.engine.submit(recordAs(token, [t.sessionStarted(), t.started(), t.step(1)]));
    await fx.engine.submit({ type: 'turn.interrupt', commandId: 'stop', threadId: 'th', turnId: 't1', reason: 'enough' });
    await fx.engine.submit(expire(token));
    expect(await turn()).toMatchObject({ state: 'interrupted', interrupt: { cause: 'workerLost' } });
  });

  it('accepts a step whose request digest matches the log, and refuses one that does not', async () => {
    const token = (await fx.engine.submit(lease('w1'))).toThreadSeq;
    await fx.engine.submit(recordAs(token, [t.sessionStarted(), t.started()]));
    const seq = (await fx.engine.getThread('th')).seq;
    await expect(fx.engine.submit(recordAs(token, [{ type: 'step.started', turnId: 't1', step: 1, digest: 'not-the-log' }]))).rejects.toMatchObject({ code: 'conflict' });
    expect((await fx.engine.getThread('th')).seq).toBe(seq);
    const digest = messagesDigest(deriveMessages(await fx.engine.getThread('th')));
    await fx.engine.submit(recordAs(token, [{ type: 'step.started', turnId: 't1', step: 1, digest }]));
    expect((await turn()).state).toBe('running.requesting');
  });

  it('checks a write as it would be decided, writing nothing: the same refusals, and no receipt to answer a later write with', async () => {
    const token = (await fx.engine.submit(lease('w1'))).toThreadSeq;
    const before = await fx.engine.getThread('th');
    const opening = [t.sessionStarted(), t.started()];
    await expect(fx.engine.check(recordAs(token, [...opening, { type: 'step.started', turnId: 't1', step: 1, digest: 'not-the-log' }]))).rejects.toMatchObject({ code: 'conflict' });
    await expect(fx.engine.check(recordAs(token, opening, 'a-guessed-key-0000'))).rejects.toMatchObject({ code: 'fenced' });
    const digest = messagesDigest(deriveMessages(before));
    const check = recordAs(token, [...opening, { type: 'step.started', turnId: 't1', step: 1, digest }]);
    const checked = await fx.engine.check(check);
    expect(checked).toMatchObject({ fromThreadSeq: before.seq + 1, toThreadSeq: before.seq + 3, refused: [] });
    // Nothing was written, and the same command id still runs as a write.
    expect(await fx.engine.getThread('th')).toEqual(before);
    expect(fx.store.readReceipt(check.commandId)).toBeUndefined();
    expect(await fx.engine.submit(check)).toMatchObject({ fromThreadSeq: before.seq + 1, toThreadSeq: before.seq + 3 });
    expect((await turn()).state).toBe('running.requesting');
  });
});
