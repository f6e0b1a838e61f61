import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { InProcessHub, JSON_TYPE, decode, encode, subjects } from '../../bus/index.ts';
import { TurnloomClient } from '../../client/index.ts';
import { Engine } from '../../services/engine/engine.ts';
import { startTurnloomServer } from '../../services/turnloomServer.ts';
import type { DomainEvent } from '../../domain/index.ts';
import type { Command, CommandResult } from '../../services/engine/commands.ts';
import { leaseKeyHash } from '../../services/engine/decide.ts';
import { createThread, readAllReceipts, startTurn, turnEvents } from '../support/engineFixture.ts';
import { tempDir } from '../support/tempDir.ts';

describe('receipts', () => {
  let dir: ReturnType<typeof tempDir>;
  afterEach(() => dir.remove());

  it('are not written for a refused command whose id the server made up', async () => {
    dir = tempDir('turnloom-receipts-');
    const hub = new InProcessHub();
    const server = await startTurnloomServer({ bus: hub.connect(), store: LmdbStore.open(dir.path) });
    const bus = hub.connect();
    const client = new TurnloomClient(bus);
    const { threadId } = await client.call('thread.create', { commandId: 'create-1' });
    // Sent as a bare request, without the command id `TurnloomClient` gives every command it may send again.
    const interrupt = async () => (decode((await bus.request(subjects().api('turn.interrupt'), encode({ threadId }, JSON_TYPE), { headers: { 'content-type': JSON_TYPE } })).data, JSON_TYPE) as { error?: { code: string } }).error?.code;
    let refused = 0;
    for (let batch = 0; batch < 200; batch++) refused += (await Promise.all(Array.from({ length: 100 }, interrupt))).filter((code) => code === 'illegal_transition').length;
    expect(refused).toBe(20_000);
    // A client id keeps its answer, rejection included, so a retry hears the same.
    await expect(client.call('turn.interrupt', { threadId, commandId: 'mine' })).rejects.toMatchObject({ code: 'illegal_transition' });
    await server.stop();
    const receipts = await readAllReceipts(dir.path);
    expect(receipts.map(({ commandId, outcome }) => [commandId, outcome]).sort()).toEqual([
      ['create-1', 'accepted'],
      ['mine', 'rejected'],
    ]);
  });

  it('never pass their thread\'s bound, and expire by age; a retry after either is a new command', async () => {
    dir = tempDir('turnloom-receipts-');
    let now = 1_000_000;
    const store = LmdbStore.open(dir.path);
    const engine = await Engine.open({ store, now: () => now, receipts: { ttlMs: 60_000, maxPerThread: 5 } });
    await engine.submit(createThread('th'));
    for (let index = 0; index < 8; index++) {
      now += 1_000;
      await engine.submit({ type: 'thread.rename', commandId: `rename-${index}`, threadId: 'th', title: `t${index}` }, { clientCommandId: true });
      // The thread's oldest goes in the very transaction that writes one past its bound: no sweep is waited for.
      expect(store.receiptTotal()).toBeLessThanOrEqual(5);
    }
    expect(await engine.expireReceipts()).toBe(0);
    const retried = await engine.submit({ type: 'thread.rename', commandId: 'rename-7', threadId: 'th', title: 't7' });
    expect(retried.fromThreadSeq).toBe(9);
    expect(retried.toThreadSeq).toBe(9);
    // The first rename's receipt is gone: the same id now writes again.
    const again = await engine.submit({ type: 'thread.rename', commandId: 'rename-0', threadId: 'th', title: 't0' });
    expect(again.fromThreadSeq).toBe(10);
    // Past the age, all of them go.
    now += 61_000;
    expect(await engine.expireReceipts()).toBe(5);
    await engine.close();
    expect(await readAllReceipts(dir.path)).toEqual([]);
  });

  it('of a worker\'s writes are one per lease, the last write\'s: many writes stay within a small bound and a retry is still answered, after a restart too', async () => {
    dir = tempDir('turnloom-receipts-');
    const cap = 20;
    const fx = { store: LmdbStore.open(dir.path) };
    let engine = await Engine.open({ store: fx.store, receipts: { maxPerThread: cap } });
    const t = turnEvents('t1');
    const key = 'the-worker-key';
    const write = (seq: number, events: DomainEvent[]): Command => ({ type: 'turn.record', commandId: `sys:record:th:t1:${token}:${seq}`, threadId: 'th', turnId: 't1', lease: { token, key }, seq, events });
    await engine.submit(createThread('th'));
    await engine.submit(startTurn('th', 't1'));
    const token = (await engine.submit({ type: 'turn.lease', commandId: 'lease-1', threadId: 'th', turnId: 't1', workerId: 'w1', keyHash: leaseKeyHash(key) })).toThreadSeq;
    let seq = 1;
    await engine.submit(write(seq, [t.sessionStarted(), t.started(), t.step(1), { type: 'part.started', turnId: 't1', partId: 'p1', step: 1, kind: 'text' }]));
    const writes = 10 * cap;
    let last: CommandResult | undefined;
    for (let index = 0; index < writes; index++) {
      seq += 1;
      last = await engine.submit(write(seq, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: `chunk ${index} ` }]));
      expect(fx.store.receiptTotal()).toBeLessThanOrEqual(cap);
    }
    const threadSeq = (await engine.getThread('th')).seq;
    // The answer to the last write got lost: the outbox sends it again, and hears the same answer.
    expect(await engine.submit(write(seq, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: `chunk ${writes - 1} ` }]))).toEqual(last);
    // An engine restart in between changes nothing.
    await engine.close();
    fx.store = LmdbStore.open(dir.path);
    engine = await Engine.open({ store: fx.store, receipts: { maxPerThread: cap } });
    expect(await engine.submit(write(seq, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: `chunk ${writes - 1} ` }]))).toEqual(last);
    // An earlier write again is not what an outbox does: refused, not written twice.
    await expect(engine.submit(write(seq - 5, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: `chunk ${writes - 6} ` }]))).rejects.toMatchObject({ code: 'conflict', details: { lastWriteSeq: seq } });
    // The same number with other events is another command.
    await expect(engine.submit(write(seq, [{ type: 'part.delta', turnId: 't1', partId: 'p1', text: 'something else' }]))).rejects.toMatchObject({ code: 'conflict' });
    expect((await engine.getThread('th')).seq).toBe(threadSeq);
    expect((await engine.getThread('th')).turns.t1!.messages[1].parts.find((part) => part.id === 'p1')!.text).toBe(Array.from({ length: writes }, (_, index) => `chunk ${index} `).join(''));
    // The next write goes on as usual.
    await engine.submit(write(seq + 1, [{ type: 'part.completed', turnId: 't1', partId: 'p1', signature: null }]));
    expect((await engine.getThread('th')).seq).toBe(threadSeq + 1);
    await engine.close();
    const receipts = await readAllReceipts(dir.path);
    expect(receipts.length).toBeLessThanOrEqual(cap);
    expect(receipts.filter((receipt) => receipt.commandId.startsWith('sys:record:'))).toEqual([expect.objectContaining({ commandId: `sys:record:th:t1:${token}`, writeSeq: seq + 1 })]);
  });
});
