import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DomainEvent, type Invariant, InvariantViolation, emptyCursor } from '../../domain/index.ts';
import { advanceCursor } from '../../domain/logInvariants.ts';
import { type EngineFixture, createThread, openEngineFixture, record, startTurn, turnEvents } from '../support/engineFixture.ts';

const t = turnEvents('t1');
const opening: DomainEvent[] = [
  { type: 'thread.created', title: 'x', workspace: null, owner: null, environment: 'default', permissions: { mode: 'ask', rules: [] } },
  { type: 'turn.requested', turnId: 't1', input: { text: 'hi' }, provider: { name: 'scripted', model: null }, mode: null },
  t.started(),
  t.step(1),
];

function fold(events: DomainEvent[]) {
  return events.reduce((cursor, event, index) => advanceCursor(cursor, index + 1, event), emptyCursor());
}

function violationOf(events: DomainEvent[]): Invariant | undefined {
  try {
    fold(events);
    return undefined;
  } catch (error) {
    if (error instanceof InvariantViolation) return error.invariant;
    throw error;
  }
}

describe('log invariants, checked on the pure cursor', () => {
  it('accepts a well-formed turn', () => {
    expect(violationOf([...opening, ...t.toolCall('p1', 1, 'c1', {}), t.executing('p1', 'c1'), t.result('p1', 'c1', 'ok'), t.stepFinished(1), t.completed()])).toBeUndefined();
  });

  it('sequence: thread sequences are contiguous and strictly increasing', () => {
    expect(() => advanceCursor(emptyCursor(), 2, opening[0]!)).toThrow(InvariantViolation);
    const cursor = advanceCursor(emptyCursor(), 1, opening[0]!);
    expect(() => advanceCursor(cursor, 1, { type: 'thread.renamed', title: 'y' })).toThrow(/sequence/);
  });

  it('turn-pairing: a turn opens only when none is open', () => {
    expect(violationOf([...opening.slice(0, 2), { ...opening[1]!, turnId: 't2' } as DomainEvent])).toBe('turn-pairing');
  });

  it('step-pairing: steps open one at a time, in order, and close before the turn does', () => {
    expect(violationOf([...opening, t.step(2)])).toBe('step-pairing');
    expect(violationOf([...opening, t.stepFinished(1), t.step(3)])).toBe('step-pairing');
    expect(violationOf([...opening, t.completed()])).toBe('step-pairing');
    expect(violationOf([...opening, t.stepFinished(2)])).toBe('step-pairing');
    expect(violationOf([...opening, { type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }, t.stepFinished(1)])).toBe('step-pairing');
  });

  it("turn-scope: a turn's events only while that turn is open", () => {
    expect(violationOf([...opening.slice(0, 2), { type: 'turn.started', turnId: 't2' }])).toBe('turn-scope');
    expect(violationOf([...opening, t.stepFinished(1), t.completed(), { type: 'activity.recorded', turnId: 't1', kind: 'info', message: 'late', data: {} }])).toBe('turn-scope');
  });

  it('tool-result-after-call: a tool result only after a call of the same step', () => {
    expect(violationOf([...opening, ...t.toolCall('p1', 1, 'c1', {}), t.executing('p1', 'c1'), t.result('p1', 'c-other', 'ok')])).toBe('tool-result-after-call');
    expect(violationOf([...opening, t.result('p1', 'c1', 'ok')])).toBe('tool-result-after-call');
  });

  it('part-in-step: parts start in the open step and take events only while open', () => {
    expect(violationOf([...opening, { type: 'part.started', turnId: 't1', partId: 'p1', step: 2, kind: 'text' }])).toBe('part-in-step');
    expect(violationOf([...opening, ...t.text('p1', 1, 'a'), { type: 'part.delta', turnId: 't1', partId: 'p1', text: 'late' }])).toBe('part-in-step');
  });
});

describe('log invariants, enforced by the engine before commit', () => {
  let fx: EngineFixture;
  beforeEach(async () => {
    fx = await openEngineFixture();
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    await fx.engine.submit(record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1)]));
  });
  afterEach(async () => {
    await fx.dispose();
  });

  // Each of these passes every machine; only the log rules catch it.
  const attempts: Array<[Invariant, () => DomainEvent[]]> = [
    ['step-pairing', () => [{ type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }, t.stepFinished(1)]],
    ['step-pairing', () => [t.stepFinished(1), t.step(3)]],
    ['tool-result-after-call', () => [...t.toolCall('p1', 1, 'c1', {}), ...t.toolsStarted(1, ['c1']), t.executing('p1', 'c1'), t.result('p1', 'c2', 'ok')]],
    ['part-in-step', () => [{ type: 'part.started', turnId: 't1', partId: 'p1', step: 7, kind: 'text' }]],
    ['turn-scope', () => [t.stepFinished(1), t.completed(), { type: 'activity.recorded', turnId: 't1', kind: 'info', message: 'late', data: {} }]],
  ];

  it.each(attempts)('refuses a command that breaks %s and writes none of it', async (invariant, events) => {
    const before = fx.store.lastSeq();
    const command = record('th1', 't1', events());
    const error = await fx.engine.submit(command).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(InvariantViolation);
    expect((error as InvariantViolation).invariant).toBe(invariant);
    expect(fx.store.lastSeq()).toBe(before);
    expect((await fx.engine.getThread('th1')).turns.t1!.state).toBe('running.requesting');
    // The refusal is the command's answer from now on, as the same class.
    const again = await fx.engine.submit(command).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(again).toBeInstanceOf(InvariantViolation);
    expect((again as InvariantViolation).invariant).toBe(invariant);
  });

  it('never opens a second turn beside the open one (turn pairing): a second start waits in the queue', async () => {
    const result = await fx.engine.submit(startTurn('th1', 't2'));
    expect(fx.store.readThreadEvents('th1', result.fromThreadSeq - 1, 10).map(({ event }) => event.type)).toEqual(['turn.queued']);
    const view = await fx.engine.getThread('th1');
    expect([view.openTurnId, view.cursor.openTurnId, view.queue.map(({ turnId }) => turnId)]).toEqual(['t1', 't1', ['t2']]);
  });
});
