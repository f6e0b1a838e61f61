import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../adapters/groupCommit.ts';
import { tempDir } from '../support/tempDir.ts';

describe('group commit', () => {
  let dir: ReturnType<typeof tempDir>;
  let env: ReturnType<typeof open>;
  beforeEach(() => {
    dir = tempDir('turnloom-group-');
    env = open({ path: dir.path });
  });
  afterEach(async () => {
    await env.close();
    dir.remove();
  });

  it('writes queued together share one transaction; a write that throws is undone alone', async () => {
    const group = new GroupCommit(env);
    const writes = Array.from({ length: 32 }, (_, n) =>
      group.run(() => {
        env.put(`key${n}`, n);
        if (n === 7) throw new Error('write 7 fails after its put');
        return env.getWriteTxnId();
      }),
    );
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes[7]).toMatchObject({ status: 'rejected', reason: { message: 'write 7 fails after its put' } });
    const txnIds = new Set(outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : [])));
    expect(txnIds.size).toBe(1);
    expect(env.get('key7')).toBeUndefined();
    expect([0, 6, 8, 31].map((n) => env.get(`key${n}`))).toEqual([0, 6, 8, 31]);

    // Writes of later turns of the event loop are later transactions.
    const later = await group.run(() => env.getWriteTxnId());
    expect(later).toBeGreaterThan([...txnIds][0]!);
  });

  it('keeps the order writes were queued in', async () => {
    const group = new GroupCommit(env);
    const seen: number[] = [];
    await Promise.all(Array.from({ length: 10 }, (_, n) => group.run(() => seen.push(n))));
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
