import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SideTaskReport } from '../../domain/index.ts';
import type { Command } from '../../services/engine/commands.ts';
import { type EngineFixture, createThread, nextId, openEngineFixture, rebuildFromLog, record, startTurn, turnEvents } from '../support/engineFixture.ts';

let fx: EngineFixture;
beforeEach(async () => {
  fx = await openEngineFixture();
});
afterEach(async () => {
  await fx.dispose();
});

const usage = { input: 40, output: 6, reasoning: 0, cacheRead: 0, cacheWrite: 0 };

const sideWork = (threadId: string, report: Omit<SideTaskReport, 'model' | 'usage'>): Command => ({
  type: 'sideWork.record',
  commandId: nextId('side-'),
  threadId,
  workerId: 'w1',
  report: { model: 'm-1', usage, ...report },
});

async function completedTurn(threadId: string, turnId: string): Promise<void> {
  const t = turnEvents(turnId);
  await fx.engine.submit(startTurn(threadId, turnId));
  await fx.engine.submit(record(threadId, turnId, [t.started(), t.step(1), ...t.text(`${turnId}-p1`, 1, 'Done.'), t.responded(1, 'stop'), t.stepFinished(1), t.completed()]));
}

const typesAfter = async (threadId: string, seq: number) => fx.engine.readEvents(threadId, seq, 100).map(({ event }) => event.type);

describe('engine: side work a worker reports for a completed turn', () => {
  it('titles a thread that keeps its first title: an activity with the model, usage and outcome, then the rename', async () => {
    await fx.engine.submit(createThread('th1', 'New thread'));
    await completedTurn('th1', 't1');
    const before = (await fx.engine.getThread('th1')).seq;
    await fx.engine.submit(sideWork('th1', { kind: 'title', turnId: 't1', outcome: { kind: 'done', text: 'Fix the login race' } }));
    expect(await typesAfter('th1', before)).toEqual(['activity.recorded', 'thread.renamed']);
    const view = await fx.engine.getThread('th1');
    expect(view.title).toBe('Fix the login race');
    expect(view.renamedAt).toBe(before + 2);
    expect(view.turns.t1!.activities).toEqual([]);
    expect(view.activities).toEqual([
      expect.objectContaining({
        kind: 'sideWork.title',
        message: 'titled the thread "Fix the login race"',
        data: { turnId: 't1', workerId: 'w1', model: 'm-1', usage, outcome: 'applied', text: 'Fix the login race', reason: null, error: null },
      }),
    ]);
    expect(fx.engine.summary('th1')!.title).toBe('Fix the login race');
  });

  it('never replaces a title a rename gave: the generated one is recorded as not applied', async () => {
    await fx.engine.submit(createThread('th1', 'New thread'));
    await completedTurn('th1', 't1');
    await fx.engine.submit({ type: 'thread.rename', commandId: nextId('c-'), threadId: 'th1', title: 'Mine' });
    const before = (await fx.engine.getThread('th1')).seq;
    await fx.engine.submit(sideWork('th1', { kind: 'title', turnId: 't1', outcome: { kind: 'done', text: 'Generated' } }));
    expect(await typesAfter('th1', before)).toEqual(['activity.recorded']);
    const view = await fx.engine.getThread('th1');
    expect(view.title).toBe('Mine');
    expect(view.activities.at(-1)!.data).toMatchObject({ outcome: 'skipped', text: 'Generated', reason: `the thread was renamed (seq ${before})` });
  });

  it('folds a summary into its turn, also while a later turn is open, once; the stored view is the fold of the log', async () => {
    await fx.engine.submit(createThread('th1'));
    await completedTurn('th1', 't1');
    await fx.engine.submit(startTurn('th1', 't2'));
    await fx.engine.submit(sideWork('th1', { kind: 'summary', turnId: 't1', outcome: { kind: 'done', text: 'Shares a login under way' } }));
    await fx.engine.submit(sideWork('th1', { kind: 'summary', turnId: 't1', outcome: { kind: 'done', text: 'Another line' } }));
    const view = await fx.engine.getThread('th1');
    expect(view.turns.t1!.summary).toBe('Shares a login under way');
    expect(view.turns.t2!.summary).toBeNull();
    expect(view.openTurnId).toBe('t2');
    expect(view.activities.map((activity) => activity.data.outcome)).toEqual(['applied', 'skipped']);
    expect(view.activities[1]!.data.reason).toBe('the turn has a summary already');
    expect(fx.store.readTurn('th1', 't1')!.summary).toBe('Shares a login under way');
    expect(rebuildFromLog(fx.store, 'th1')).toEqual(fx.store.readView('th1'));
    await fx.restart();
    expect((await fx.engine.getThread('th1')).turns.t1!.summary).toBe('Shares a login under way');
  });

  it('records a failure as an activity and changes nothing else', async () => {
    await fx.engine.submit(createThread('th1', 'New thread'));
    await completedTurn('th1', 't1');
    const before = (await fx.engine.getThread('th1')).seq;
    await fx.engine.submit(sideWork('th1', { kind: 'title', turnId: 't1', outcome: { kind: 'failed', error: 'server: down' } }));
    expect(await typesAfter('th1', before)).toEqual(['activity.recorded']);
    const view = await fx.engine.getThread('th1');
    expect(view.title).toBe('New thread');
    expect(view.renamedAt).toBeNull();
    expect(view.activities.at(-1)).toMatchObject({ kind: 'sideWork.title', message: 'no title: server: down', data: { outcome: 'failed', error: 'server: down', text: null } });
  });

  it('refuses side work for a turn that is not completed, or unknown, and writes nothing', async () => {
    await fx.engine.submit(createThread('th1'));
    await fx.engine.submit(startTurn('th1', 't1'));
    const before = (await fx.engine.getThread('th1')).seq;
    await expect(fx.engine.submit(sideWork('th1', { kind: 'title', turnId: 't1', outcome: { kind: 'done', text: 'Early' } }))).rejects.toMatchObject({ code: 'conflict' });
    await expect(fx.engine.submit(sideWork('th1', { kind: 'title', turnId: 'nope', outcome: { kind: 'done', text: 'Lost' } }))).rejects.toMatchObject({ code: 'not_found' });
    expect((await fx.engine.getThread('th1')).seq).toBe(before);
  });
});
