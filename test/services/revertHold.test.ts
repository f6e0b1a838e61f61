import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../domain/index.ts';
import { CrashRepair } from '../../services/runtime/crashRepair.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { type EngineFixture, createThread, openEngineFixture, record, startTurn, turnEvents } from '../support/engineFixture.ts';

const t = turnEvents('t1');
const tree = (side: string) => ({ ref: `refs/turnloom/checkpoints/th/t1/${side}`, commit: (side === 'before' ? 'a' : 'b').repeat(40) });
const changedNothing = { files: [], filesChanged: 0, additions: 0, deletions: 0, filesOmitted: 0 };

/** A thread whose one turn wrote a file and completed, with its checkpoints. */
async function threadWithAChangingTurn(fx: EngineFixture): Promise<void> {
  await fx.engine.submit(createThread('th'));
  await fx.engine.submit(startTurn('th', 't1'));
  const captured = (side: 'before' | 'after'): DomainEvent => ({ type: 'checkpoint.captured', turnId: 't1', side, ...tree(side), diff: side === 'after' ? { ...changedNothing, patch: '', truncated: false } : null });
  await fx.engine.submit(record('th', 't1', [t.sessionStarted(), t.started(), captured('before'), t.step(1), ...t.text('p1', 1, 'done'), t.responded(1, 'stop'), t.stepFinished(1), captured('after'), t.completed()]));
}

describe('a revert holds the thread, from its start to its end', () => {
  let fx: EngineFixture;
  beforeEach(async () => {
    fx = await openEngineFixture();
    await threadWithAChangingTurn(fx);
  });
  afterEach(async () => {
    await fx.dispose();
  });
  const begin = (commandId: string) => fx.engine.submit({ type: 'checkpoint.revert', commandId, threadId: 'th', turnId: 't1', by: 'alice' });

  it('is recorded before any file changes; meanwhile a new turn waits in the queue, and a second revert or an archive are refused', async () => {
    await begin('revert-1');
    let view = await fx.engine.getThread('th');
    expect(view.revert).toMatchObject({ turnIds: ['t1'], turns: [{ turnId: 't1', before: tree('before').commit, after: tree('after').commit }], by: 'alice' });
    expect(view.session.state).toBe('reverting');

    await fx.engine.submit(startTurn('th', 't2', 'next'));
    view = await fx.engine.getThread('th');
    expect(view.openTurnId).toBeNull();
    expect(view.queue.map((queued) => queued.turnId)).toEqual(['t2']);
    await expect(begin('revert-2')).rejects.toMatchObject({ code: 'conflict' });
    await expect(fx.engine.submit({ type: 'thread.archive', commandId: 'archive', threadId: 'th' })).rejects.toMatchObject({ code: 'conflict' });

    // Its end frees the thread, and the queued turn is requested in the same commit.
    const { revertId } = view.revert!;
    await fx.engine.submit({ type: 'checkpoint.finishRevert', commandId: 'done', threadId: 'th', revertId, changes: changedNothing, saved: tree('saved') });
    view = await fx.engine.getThread('th');
    expect(view.revert).toBeNull();
    expect(view.turns.t1!.revertedAt).not.toBeNull();
    expect(view.reverts).toEqual([expect.objectContaining({ turnIds: ['t1'], saved: tree('saved') })]);
    expect(view.openTurnId).toBe('t2');
    expect(view.session.state).toBe('starting');
    // A late or repeated end of it changes nothing.
    await expect(fx.engine.submit({ type: 'checkpoint.abandonRevert', commandId: 'late', threadId: 'th', revertId, reason: 'late', conflicts: [], saved: null })).rejects.toMatchObject({ code: 'conflict' });
    expect(view).toEqual(rebuildView('th', fx.store.readThreadEvents('th', 0, 1_000)));
  });

  it('that did not happen says why, and leaves the turns standing', async () => {
    await begin('revert-1');
    const { revertId } = (await fx.engine.getThread('th')).revert!;
    await fx.engine.submit({ type: 'checkpoint.abandonRevert', commandId: 'refused', threadId: 'th', revertId, reason: 'a.txt was changed since', conflicts: ['a.txt'], saved: null });
    const view = await fx.engine.getThread('th');
    expect(view.revert).toBeNull();
    expect(view.turns.t1!.revertedAt).toBeNull();
    expect(view.session.state).toBe('idle');
    // It may be tried again.
    await begin('revert-again');
    expect((await fx.engine.getThread('th')).revert).not.toBeNull();
  });

  it('cut short by a crash is ended by crash repair on restart, so the thread is not held for ever', async () => {
    await begin('revert-1');
    await fx.engine.submit(startTurn('th', 't2', 'next'));
    const engine = await fx.restart();
    expect(fx.store.openReverts()).toHaveLength(1);
    await new CrashRepair(engine).run();
    const view = await engine.getThread('th');
    expect(view.revert).toBeNull();
    expect(view.turns.t1!.revertedAt).toBeNull();
    expect(view.openTurnId).toBe('t2');
    const failed = fx.store.readThreadEvents('th', 0, 1_000).map(({ event }) => event).find((event) => event.type === 'checkpoint.revertFailed');
    expect(failed).toMatchObject({ reason: expect.stringMatching(/stopped; its files may be partly put back/) });
    expect(fx.store.openReverts()).toEqual([]);
  });
});
