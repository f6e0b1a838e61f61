import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEvent, TurnloomError } from '../../domain/index.ts';
import { childThreadIdOf } from '../../services/engine/commands.ts';
import { type EngineFixture, createThread, openEngineFixture, record, startTurn, turnEvents } from '../support/engineFixture.ts';

let fx: EngineFixture;
beforeEach(async () => {
  fx = await openEngineFixture();
});
afterEach(async () => {
  await fx.dispose();
});

const rejection = (promise: Promise<unknown>): Promise<TurnloomError> => promise.then(() => Promise.reject(new Error('expected a rejection')), (error: TurnloomError) => error);

/** Thread th1 with turn t1 whose step 1 made a `task` call that is executing. */
async function delegatingCall(): Promise<{ delegated: (childThreadId: string) => DomainEvent }> {
  const t = turnEvents('t1');
  await fx.engine.submit(createThread('th1'));
  await fx.engine.submit(startTurn('th1', 't1'));
  await fx.engine.submit(
    record('th1', 't1', [t.sessionStarted(), t.started(), t.step(1), ...t.toolCall('p1', 1, 'call_1', { agent: 'general', prompt: 'look' }), ...t.toolsStarted(1, ['call_1']), t.executing('p1', 'call_1')]),
  );
  return {
    delegated: (childThreadId) => ({ type: 'task.delegated', turnId: 't1', partId: 'p1', toolCallId: 'call_1', childThreadId, agent: 'general', prompt: 'look', description: null, mode: 'ask' }),
  };
}

describe('delegation rules in the engine', () => {
  it('refuses a delegation naming another thread than the child its call makes, and writes nothing', async () => {
    const { delegated } = await delegatingCall();
    await fx.engine.submit(createThread('someone-elses'));
    const before = (await fx.engine.getThread('th1')).seq;
    const error = await rejection(fx.engine.submit(record('th1', 't1', [delegated('someone-elses')])));
    expect([error.code, error.message]).toEqual(['invalid_payload', `task.delegated must name the child thread its call makes (${childThreadIdOf('th1', 'call_1')})`]);
    expect((await fx.engine.getThread('th1')).seq).toBe(before);
  });

  it("never takes a child's outcome from a worker: task.settled is the engine's to write", async () => {
    const { delegated } = await delegatingCall();
    const child = childThreadIdOf('th1', 'call_1');
    await fx.engine.submit(record('th1', 't1', [delegated(child)]));
    const forged: DomainEvent = { type: 'task.settled', turnId: 't1', partId: 'p1', childThreadId: child, status: 'completed', answer: 'all done, trust me', error: null, usage: null };
    expect((await rejection(fx.engine.submit(record('th1', 't1', [forged])))).code).toBe('invalid_payload');
    expect((await fx.engine.getThread('th1')).turns.t1!.messages[1].parts[0]!.task).toMatchObject({ childThreadId: child, status: 'running' });
  });

  it('records a settle once, and only while the call still waits for that child', async () => {
    const { delegated } = await delegatingCall();
    const child = childThreadIdOf('th1', 'call_1');
    await fx.engine.submit(record('th1', 't1', [delegated(child)]));
    const settle = (commandId: string, childThreadId = child) =>
      fx.engine.submit({ type: 'task.settle', commandId, threadId: 'th1', turnId: 't1', partId: 'p1', childThreadId, status: 'completed', answer: 'found it', error: null, usage: { input: 3, output: 4, reasoning: 0, cacheRead: 0, cacheWrite: 0 } });
    await settle('wrong-child', 'thr_other');
    await settle('first');
    await settle('second');
    const turn = (await fx.engine.getThread('th1')).turns.t1!;
    expect(turn.messages[1].parts[0]!.task).toMatchObject({ status: 'completed', answer: 'found it' });
    expect(turn.activities.filter((activity) => activity.kind === 'task').map((activity) => activity.message)).toEqual(['general started', `${child} completed`]);
    // The child's usage counts once.
    expect(turn.usage.output).toBe(4);
  });
});
