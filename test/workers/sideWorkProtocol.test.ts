import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, subjects } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import type { HelloAnswer } from '../../services/dispatch/workerProtocol.ts';
import { type TurnloomServer, startTurnloomServer } from '../../services/turnloomServer.ts';
import { WorkerLink } from '../../services/worker/workerLink.ts';
import { tempDir } from '../support/tempDir.ts';

/** The engine's checks on `<p>.v1.worker.sideWork`, with a worker written by hand. */
describe('the sideWork worker method', () => {
  const dir = tempDir('turnloom-side-protocol-');
  let server: TurnloomServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    dir.remove();
  });

  it('takes a report only from a live worker that held the turn, for a completed turn, in bounded single lines; a retry writes nothing', async () => {
    const hub = new InProcessHub();
    server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    const api = new TurnloomClient(hub.connect());
    const { threadId } = await api.call('thread.create', {});
    const { turnId } = await api.call('turn.start', { threadId, input: { text: 'hello' } });
    const link = new WorkerLink(hub.connect(), subjects(), 'default');
    await link.call<HelloAnswer>('hello', { workerId: 'manual', environment: 'default', workspace: null, host: 'here', pid: 1, capacity: 1, running: [] });
    const key = 'a-key-only-this-worker-knows';
    const { token } = await link.call<{ token: number }>('claim', { workerId: 'manual', threadId, turnId, claimId: 'c1', keyHash: createHash('sha256').update(key).digest('hex') });
    const lease = { workerId: 'manual', threadId, turnId, token, key };
    const report = { kind: 'title', model: 'm', usage: null, outcome: { kind: 'done', text: 'Hello there' } };
    const side = (body: object) => link.call('sideWork', { ...lease, ...report, ...body });

    await expect(side({})).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('completed') });
    // A worker may not forge side work's activities through a turn's record.
    await expect(link.call('record', { ...lease, seq: 1, events: [{ type: 'activity.recorded', turnId: null, kind: 'sideWork.title', message: 'x', data: {} }] })).rejects.toMatchObject({ code: 'invalid_payload' });
    await link.call('record', { ...lease, seq: 2, events: [{ type: 'turn.started', turnId }, { type: 'turn.completed', turnId, stopReason: 'stop' }] });
    const settled = (await api.call('thread.get', { threadId })).thread.seq;

    await expect(side({ key: 'not-the-key-0000000000' })).rejects.toMatchObject({ code: 'fenced' });
    await expect(side({ token: token - 1 })).rejects.toMatchObject({ code: 'fenced' });
    await expect(side({ workerId: 'stranger' })).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('hello') });
    await expect(side({ threadId: 'thr_nope' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(side({ outcome: { kind: 'done', text: 'two\nlines' } })).rejects.toMatchObject({ code: 'invalid_payload' });
    await expect(side({ outcome: { kind: 'done', text: 'x'.repeat(121) } })).rejects.toMatchObject({ code: 'invalid_payload' });
    await expect(side({ outcome: { kind: 'done', text: 'x'.repeat(121) }, kind: 'summary' })).resolves.toBeDefined();
    await expect(side({ extra: true })).rejects.toMatchObject({ code: 'invalid_payload' });
    const seq = (await api.call('thread.get', { threadId })).thread.seq;
    expect(seq).toBe(settled + 2);

    const first = await side({});
    expect(await side({})).toEqual(first);
    const { thread } = await api.call('thread.get', { threadId });
    expect(thread.title).toBe('Hello there');
    expect(thread.turns[turnId]!.summary).toBe('x'.repeat(121));
    expect(thread.seq).toBe(seq + 2);
  });
});
