import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IllegalTransition, InvariantViolation, type StoredEvent, TurnloomError } from '../../domain/index.ts';
import { type EngineFixture, createThread, nextId, openEngineFixture, readAllReceipts, rebuildFromLog, record, startTurn, turnEvents } from '../support/engineFixture.ts';

let fx: EngineFixture;
beforeEach(async () => {
  fx = await openEngineFixture();
});
afterEach(async () => {
  await fx.dispose();
});

async function rejection(promise: Promise<unknown>): Promise<TurnloomError> {
  try {
    await promise;
  } catch (error) {
    return error as TurnloomError;
  }
  throw new Error('expected a rejection');
}

describe('engine: commands through the lifecycle actors', () => {
  it('runs a turn with a tool call approved by a client and folds it into the read model', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(
      record('th1', 't1', [
        t.sessionStarted(),
        t.started(),
        t.step(1),
        ...t.text('p1', 1, 'Let me ', 'look.'),
        ...t.toolCall('p2', 1, 'call-1', { cmd: 'npm test' }),
        ...t.toolsStarted(1, ['call-1']),
        t.approvalRequested('a1', 'p2', 'call-1'),
      ]),
    );
    let view = await fx.engine.getThread('th1');
    expect(view.turns.t1!.state).toBe('running.awaitingApproval');
    expect(view.turns.t1!.approvals[0]).toMatchObject({ id: 'a1', state: 'pending' });

    await fx.engine.submit({ type: 'approval.respond', commandId: nextId('cmd-'), threadId: 'th1', approvalId: 'a1', decision: 'approve', by: 'alice', note: null });
    await fx.engine.submit(
      record('th1', 't1', [
        { type: 'approval.consumed', turnId: 't1', approvalId: 'a1' },
        t.executing('p2', 'call-1'),
        t.result('p2', 'call-1', 'all green'),
        t.stepFinished(1, 'toolCalls'),
        t.step(2),
        ...t.text('p3', 2, 'Tests pass.'),
        t.stepFinished(2),
        t.completed(),
      ]),
    );
    view = await fx.engine.getThread('th1');
    const turn = view.turns.t1!;
    expect(turn.state).toBe('completed');
    expect(view.session.state).toBe('ready');
    expect(view.openTurnId).toBeNull();
    expect(turn.messages[0].parts[0]!.text).toBe('fix the race');
    expect(turn.messages[1].parts.map((part) => [part.kind, part.state, part.text])).toEqual([
      ['text', 'completed', 'Let me look.'],
      ['tool', 'completed', ''],
      ['text', 'completed', 'Tests pass.'],
    ]);
    expect(turn.messages[1].parts[1]!.tool).toMatchObject({ callId: 'call-1', input: { cmd: 'npm test' }, output: 'all green' });
    expect(turn.approvals[0]).toMatchObject({ state: 'consumed', decidedBy: 'alice' });
    expect(turn.usage).toEqual({ input: 20, output: 10, reasoning: 0, cacheRead: 0, cacheWrite: 0 });
    expect(view.usage).toEqual(turn.usage);
    expect(fx.engine.liveStates('th1')).toEqual({ 'session:session': 'ready' });
    expect(fx.store.readView('th1')).toEqual(rebuildFromLog(fx.store, 'th1'));
  });

  it('rejects an approval answered twice, with the same answer for the same command id', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(
      record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a1', 'p1', 'c1')]),
    );
    await fx.engine.submit({ type: 'approval.respond', commandId: 'first', threadId: 'th1', approvalId: 'a1', decision: 'approve', by: 'alice', note: null });
    const second = { type: 'approval.respond', commandId: 'second', threadId: 'th1', approvalId: 'a1', decision: 'deny', by: 'bob', note: null } as const;
    const seqBefore = (await fx.engine.getThread('th1')).seq;
    const error = await rejection(fx.engine.submit(second));
    expect(error).toBeInstanceOf(IllegalTransition);
    expect(error.details).toEqual({ machine: 'approval', state: 'approved', event: 'approval.denied', actorId: 'a1' });
    expect((await rejection(fx.engine.submit(second))).details).toEqual(error.details);
    await fx.restart();
    expect((await rejection(fx.engine.submit(second))).details).toEqual(error.details);
    expect((await fx.engine.getThread('th1')).seq).toBe(seqBefore);
  });

  it('answers a repeated command id with the stored result and writes nothing new', async () => {
    const create = createThread('th1');
    const first = await fx.engine.submit(create);
    const again = await fx.engine.submit(create);
    expect(again).toEqual(first);
    await fx.restart();
    expect(await fx.engine.submit(create)).toEqual(first);
    expect(fx.store.readLog(0, 100)).toHaveLength(1);

    const reused = await rejection(fx.engine.submit({ ...create, title: 'something else' }));
    expect(reused.code).toBe('conflict');
    expect(fx.store.readLog(0, 100)).toHaveLength(1);
  });

  it('writes nothing for an unknown thread or a malformed record', async () => {
    const unknown = await rejection(fx.engine.submit(startTurn('nope', 't1')));
    expect(unknown.code).toBe('not_found');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    const foreign = await rejection(fx.engine.submit(record('th1', 't1', [{ type: 'turn.started', turnId: 't-other' }])));
    expect(foreign.code).toBe('invalid_payload');
    expect(fx.store.readLog(0, 100)).toHaveLength(2);
    expect((await readAllReceiptsAfterClose(fx)).length).toBe(2);
  });

  it('queues a second turn while one runs (never beside it), and refuses any turn on an archived thread', async () => {
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(startTurn('th1', 't2'));
    const view = await fx.engine.getThread('th1');
    expect([view.openTurnId, view.turnIds, view.queue.map(({ turnId }) => turnId)]).toEqual(['t1', ['t1'], ['t2']]);
    expect((await rejection(fx.engine.submit(startTurn('th1', 't2')))).code).toBe('conflict');
    expect((await rejection(fx.engine.submit({ type: 'thread.archive', commandId: nextId('c'), threadId: 'th1' }))).code).toBe('conflict');

    await fx.engine.submit(createThread('th2'));
    await fx.engine.submit({ type: 'thread.archive', commandId: nextId('c'), threadId: 'th2' });
    expect((await rejection(fx.engine.submit(startTurn('th2', 't3')))).code).toBe('conflict');
    expect((await fx.engine.getThread('th2')).turnIds).toEqual([]);
  });

  it('records provider events the machines refuse as diagnostics and carries on', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    const result = await fx.engine.submit(
      record('th1', 't1', [
        t.sessionStarted(),
        t.started(),
        t.started(),
        t.step(1),
        ...t.text('p1', 1, 'hi'),
        { type: 'part.delta', turnId: 't1', partId: 'p1', text: 'late' },
        t.completed(),
        t.stepFinished(1),
        t.completed(),
      ]),
    );
    expect(result.diagnostics).toBe(3);
    const view = await fx.engine.getThread('th1');
    expect(view.turns.t1!.state).toBe('completed');
    expect(view.turns.t1!.messages[1].parts[0]!.text).toBe('hi');
    expect(view.turns.t1!.activities.map((activity) => activity.data.event)).toEqual(['turn.started', 'content.delta', 'turn.completed']);
    expect(fx.store.readView('th1')).toEqual(rebuildFromLog(fx.store, 'th1'));
  });

  it('publishes events only after they are committed', async () => {
    const seen: Array<{ events: readonly StoredEvent[]; storedThen: number }> = [];
    fx.engine.onCommitted((events) => seen.push({ events, storedThen: fx.store.readThreadEvents(events[0]!.threadId, 0, 100).length }));
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    expect(seen.map(({ events }) => events.map((e) => e.threadSeq))).toEqual([[1], [2]]);
    expect(seen.map(({ storedThen }) => storedThen)).toEqual([1, 2]);
  });
});

describe('engine: virtual actors', () => {
  it('loads nothing at start and restores a thread on first use', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(createThread('th2'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', { a: 1 })]));
    const live = fx.engine.liveStates('th1');
    expect(live).toMatchObject({ 'turn:t1': { running: 'streaming' }, 'part:p1': { running: { tool: 'inputReady' } } });

    await fx.restart();
    expect(fx.engine.loadedThreadCount).toBe(0);
    expect((await fx.engine.getThread('th1')).turns.t1!.state).toBe('running.streaming');
    expect(fx.engine.loadedThreadCount).toBe(0);
    await fx.engine.submit(record('th1', 't1', []));
    expect(fx.engine.loadedThreadCount).toBe(1);
    expect(fx.engine.liveStates('th1')).toEqual(live);
  });

  it('passivates idle threads but never a busy one', async () => {
    let clock = 1_000;
    await fx.restart({ now: () => clock, idleMs: 10, maxLoadedThreads: 2 });
    for (const id of ['a', 'b', 'c']) await fx.engine.submit(createThread(id));
    expect(fx.engine.loadedThreadCount).toBe(2);
    expect(fx.engine.liveStates('a')).toBeUndefined();
    const busy = fx.engine.submit(startTurn('b', 't1'));
    expect(fx.engine.passivate('b')).toBe(false);
    await busy;
    clock += 100;
    expect(fx.engine.passivate('b')).toBe(true);
    expect((await fx.engine.submit(startTurn('a', 't2'))).toThreadSeq).toBe(2);
  });

  it('makes room by passivating the least recently used thread, whatever the clock says', async () => {
    // A clock that does not move: recency is the order of use, not a timestamp two commands can share.
    await fx.restart({ now: () => 1_000, maxLoadedThreads: 2 });
    for (const id of ['a', 'b']) await fx.engine.submit(createThread(id));
    await fx.engine.submit(startTurn('a', 't1'));
    await fx.engine.submit(createThread('c'));
    expect(['a', 'b', 'c'].filter((id) => fx.engine.isLoaded(id))).toEqual(['a', 'c']);
    await fx.engine.getThread('b');
    expect(fx.engine.isLoaded('b')).toBe(false);
    await fx.engine.submit(startTurn('b', 't2'));
    expect(['a', 'b', 'c'].filter((id) => fx.engine.isLoaded(id))).toEqual(['b', 'c']);
  });

  it('restores the same live states after passivation, and discards a snapshot of other machines', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1'])]));
    const before = fx.engine.liveStates('th1');
    fx.engine.passivate('th1');
    await fx.engine.submit(record('th1', 't1', []));
    expect(fx.engine.liveStates('th1')).toEqual(before);

    // Poison the stored snapshot as if older machines had written it: it must be ignored, not trusted.
    const stored = fx.store.readSnapshot('th1')!;
    expect(stored.actors.length).toBeGreaterThan(1);
    const { open } = await import('lmdb');
    await fx.engine.close();
    const env = open({ path: fx.dir, maxDbs: 16 });
    await env.openDB({ name: 'snapshots' }).put('th1', { ...stored, machinesVersion: 'older', actors: [] });
    await env.close();
    await fx.restart();
    await fx.engine.submit(record('th1', 't1', [t.executing('p1', 'c1')]));
    expect(fx.engine.liveStates('th1')).toEqual({ ...before, 'part:p1': { running: { tool: 'executing' } } });
  });
});

async function readAllReceiptsAfterClose(fixture: EngineFixture) {
  await fixture.engine.close();
  const receipts = await readAllReceipts(fixture.dir);
  await fixture.restart();
  return receipts;
}

describe('engine: turns always close, whatever order things happen in', () => {
  const open = async () => {
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
  };

  it('lets a turn settle after its failed session was stopped, and refuses to confirm a stop while a turn holds it', async () => {
    await open();
    await fx.engine.submit(record('th1', 't1', [{ type: 'session.failed', reason: 'crashed' }]));
    await fx.engine.submit({ type: 'session.stop', commandId: 'stop', threadId: 'th1', reason: 'user' });
    expect((await fx.engine.getThread('th1')).session.state).toBe('stopped');
    await fx.engine.submit({ type: 'turn.settle', commandId: 'settle', threadId: 'th1', turnId: 't1', outcome: { kind: 'interrupted', cause: 'provider', reason: 'stopped' } });
    expect((await fx.engine.getThread('th1')).turns.t1!.state).toBe('interrupted');
    await fx.engine.submit(startTurn('th1', 't2'));
    expect((await rejection(fx.engine.submit({ type: 'session.confirmStopped', commandId: 'confirm', threadId: 'th1' }))).code).toBe('conflict');
  });

  it('marks a session whose turn ended before it started as failed, so the next turn can start it', async () => {
    await open();
    await fx.engine.submit(record('th1', 't1', [{ type: 'turn.failed', turnId: 't1', error: 'no provider' }]));
    expect((await fx.engine.getThread('th1')).session).toMatchObject({ state: 'error', failure: expect.stringMatching(/before the session started/) });
    await fx.engine.submit(startTurn('th1', 't2'));
    expect((await fx.engine.getThread('th1')).session.state).toBe('starting');
  });

  it('fails a turn that waits on an approval: the approval is cancelled, the tool closed, the step finished', async () => {
    const t = turnEvents('t1');
    await open();
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.approvalRequested('a1', 'p1', 'c1')]));
    await fx.engine.submit({ type: 'turn.settle', commandId: 'fail', threadId: 'th1', turnId: 't1', outcome: { kind: 'failed', error: 'provider gone' } });
    const turn = (await fx.engine.getThread('th1')).turns.t1!;
    expect(turn.state).toBe('failed');
    expect(turn.approvals[0]!.state).toBe('cancelled');
    expect(turn.steps[0]!.outcome).toBe('error');
    expect(fx.engine.liveStates('th1')).toEqual({ 'session:session': 'ready' });
  });

  it('keeps a worker to its own turn: no client intents through turn.record', async () => {
    await open();
    const error = await rejection(fx.engine.submit(record('th1', 't1', [{ type: 'thread.archived' }, { type: 'session.stopRequested', reason: 'sneaky' }])));
    expect(error.code).toBe('invalid_payload');
    expect((await fx.engine.getThread('th1')).archived).toBe(false);
  });

  it('answers a different payload under an id already in flight with a conflict', async () => {
    await open();
    const first = fx.engine.submit({ type: 'turn.interrupt', commandId: 'same', threadId: 'th1', turnId: 't1', reason: 'a' });
    const second = fx.engine.submit({ type: 'turn.interrupt', commandId: 'same', threadId: 'th1', turnId: 't1', reason: 'b' });
    await first;
    expect((await rejection(second)).code).toBe('conflict');
  });

  it('rebuilds a stored rejection as the error class it was, and unknown codes as internal', () => {
    const invariant = TurnloomError.fromJSON({ code: 'conflict', message: 'log invariant "turn-scope" violated: late', details: { invariant: 'turn-scope' } });
    expect(invariant).toBeInstanceOf(InvariantViolation);
    expect((invariant as InvariantViolation).invariant).toBe('turn-scope');
    expect(invariant.message).toBe('log invariant "turn-scope" violated: late');
    expect(TurnloomError.fromJSON({ code: 'bogus' as never, message: 'x', details: {} }).code).toBe('internal');
  });

  it('tells every listener of a commit even when one throws, and the command still succeeds', async () => {
    const heard: number[] = [];
    fx.engine.onCommitted(() => {
      throw new Error('a broken listener');
    });
    fx.engine.onCommitted((events) => heard.push(events.length));
    await expect(fx.engine.submit(createThread('th9'))).resolves.toMatchObject({ toThreadSeq: 1 });
    expect(heard).toEqual([1]);
  });

  it('never drops steered input: what no step claimed before the turn settled becomes the next turn, first in line', async () => {
    const t = turnEvents('t1');
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(startTurn('th1', 'queued-1'));
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1)]));
    await fx.engine.submit({ ...startTurn('th1', 'in-1', 'and check the logs'), whileRunning: 'steer' });
    await fx.engine.submit({ ...startTurn('th1', 'in-2', 'and the metrics'), whileRunning: 'steer' });
    // A worker may not queue turns on a client's behalf.
    expect((await rejection(fx.engine.submit(record('th1', 't1', [{ type: 'turn.queued', queuedTurnId: 'x', input: { text: 'sneaky' }, provider: { name: 'scripted', model: null }, mode: null, place: 'back' }])))).code).toBe('invalid_payload');
    // Claiming mid-step is refused by the turn machine: a step's request never changes while it runs.
    const early = await fx.engine.submit(record('th1', 't1', [{ type: 'input.claimed', turnId: 't1', inputIds: ['in-1'], step: 1 }]));
    expect(early.refused).toEqual([{ index: 0, event: 'input.claimed', machine: 'turn', state: 'running.requesting' }]);

    const result = await fx.engine.submit(record('th1', 't1', [t.stepFinished(1), t.completed()]));
    const written = fx.store.readThreadEvents('th1', result.fromThreadSeq - 1, 10).map(({ event }) => event);
    const followUp = written.find((event) => event.type === 'turn.queued');
    expect(written.map((event) => event.type)).toEqual(['step.finished', 'turn.completed', 'turn.queued', 'turn.requested']);
    expect(followUp).toMatchObject({ input: { text: 'and check the logs\n\nand the metrics' }, place: 'front' });
    const view = await fx.engine.getThread('th1');
    expect(view.openTurnId).toBe(followUp?.type === 'turn.queued' ? followUp.queuedTurnId : null);
    expect(view.queue.map(({ turnId }) => turnId)).toEqual(['queued-1']);
    expect(fx.store.readView('th1')).toEqual(rebuildFromLog(fx.store, 'th1'));
  });

  it('keeps every id it derives from steered input a valid id, with 128-character ids and odd text', async () => {
    const t = turnEvents('t1');
    const long = 'x'.repeat(128);
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started()]));
    await fx.engine.submit({ ...startTurn('th1', long, 'lone \ud800 surrogate'), whileRunning: 'steer' });
    // A client's own turn id that happens to be the follow-up's: the follow-up still gets an id of its own.
    await fx.engine.submit({ ...startTurn('th1', 't1-steered', 'queued with a clashing id'), whileRunning: 'queue' });
    await fx.engine.submit({ ...startTurn('th1', 'in-2', 'never claimed'), whileRunning: 'steer' });
    await fx.engine.submit(record('th1', 't1', [{ type: 'input.claimed', turnId: 't1', inputIds: [long], step: 1 }, t.step(1), t.stepFinished(1), t.completed()]));
    const view = await fx.engine.getThread('th1');
    const ids = [...view.turns.t1!.messages[0].parts.map((part) => part.id), ...view.turnIds, ...view.queue.map((queued) => queued.turnId)];
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
    expect(view.turns.t1!.messages[0].parts[1]!.text).toBe('lone \ufffd surrogate');
    expect(new Set(view.turnIds).size).toBe(view.turnIds.length);
    expect(view.turnIds).toHaveLength(2);
    expect(view.queue.map((queued) => queued.turnId)).toEqual(['t1-steered']);
    expect(view.turns[view.openTurnId!]!.messages[0].parts[0]!.text).toBe('never claimed');
  });
});
