import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { Engine } from '../../services/engine/engine.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { CrashRepair } from '../../services/runtime/crashRepair.ts';
import { tempDir } from '../support/tempDir.ts';
import { spawnEngineChild } from '../support/spawnChild.ts';

describe('repair on restart', () => {
  const dir = tempDir('turnloom-repair-');
  afterEach(() => dir.remove());

  it('settles turns left running by a killed process, honestly and in pairs, and leaves a step a worker can resume', async () => {
    const child = spawnEngineChild(['repair-scenario', dir.path]);
    await child.ready;
    await child.kill();

    const store = LmdbStore.open(dir.path);
    expect(store.openTurns().map(({ turnId }) => turnId).sort()).toEqual(['t1', 't3', 't9']);
    const engine = await Engine.open({ store });
    expect(await new CrashRepair(engine).run()).toBe(2);
    expect(store.openTurns()).toEqual([{ threadId: 'th2', turnId: 't9' }]);

    const view = await engine.getThread('th1');
    const turn = view.turns.t1!;
    expect(turn.state).toBe('interrupted');
    expect(turn.interrupt).toEqual({ reason: 'the process running this turn stopped and no worker holds it', cause: 'repair' });
    expect(view.session.state).toBe('error');
    const [text, ready, streaming] = turn.messages[1].parts;
    expect(text).toMatchObject({ state: 'completed', text: 'Running two commands.' });
    expect(ready).toMatchObject({ state: 'interrupted', tool: { callId: 'call-ready', outcome: 'notStarted' } });
    expect(ready!.tool!.output).toMatch(/never started.*safe to retry/);
    expect(streaming).toMatchObject({ state: 'interrupted', tool: { callId: 'call-streaming', outcome: 'notStarted' } });
    expect(turn.steps).toEqual([expect.objectContaining({ step: 1, outcome: 'interrupted' })]);
    expect(turn.activities.map((activity) => activity.kind)).toContain('repair');

    const running = (await engine.getThread('th3')).turns.t3!;
    expect(running.state).toBe('interrupted');
    expect(running.messages[1].parts[0]).toMatchObject({ state: 'interrupted', tool: { callId: 'call-running', outcome: 'unknown' } });
    expect(running.messages[1].parts[0]!.tool!.output).toMatch(/unknown.*Verify/);

    // The approval is a durable fact: it still waits for an answer, and the step for a worker to run the call.
    const waiting = (await engine.getThread('th2')).turns.t9!;
    expect(waiting.state).toBe('running.awaitingApproval');
    expect(waiting.approvals).toEqual([expect.objectContaining({ id: 'ap1', state: 'pending' })]);
    expect(waiting.messages[1].parts[0]).toMatchObject({ state: 'running.tool.awaitingApproval' });

    // Steps and turns stay paired in the log itself, and the read model is the fold of it.
    const log = store.readThreadEvents('th1', 0, 1000).map(({ event }) => event.type);
    expect(log.filter((type) => type === 'step.started')).toHaveLength(log.filter((type) => type === 'step.finished').length);
    expect(log.at(-1)).toBe('turn.interrupted');
    expect(view).toEqual(rebuildView('th1', store.readThreadEvents('th1', 0, 1000)));

    // A new turn restarts the session from error.
    await engine.submit({ type: 'turn.start', commandId: 'next', threadId: 'th1', turnId: 't2', input: { text: 'again' }, provider: { name: 'scripted', model: null } });
    expect((await engine.getThread('th1')).session.state).toBe('starting');
    await engine.close();

    // Repair is idempotent: a second restart finds nothing to do.
    const again = await Engine.open({ store: LmdbStore.open(dir.path) });
    expect(await new CrashRepair(again).run()).toBe(0);
    expect((await again.getThread('th1')).turns.t2!.state).toBe('requested');
    await again.close();
  });
});
