import { describe, expect, it } from 'vitest';
import { decodePosition } from '../../services/api/paging.ts';
import { mergeLists } from '../../services/cluster/listMerge.ts';

const thread = (id: string) => ({ id, title: id });
const part = (threads: Array<[string, number]>, more: boolean) => ({ result: { threads: threads.map(([id]) => thread(id)), nextCursor: more ? 'x' : null }, positions: threads.map(([, position]) => position) });

describe('mergeLists: every engine’s part of a list into the page one engine would answer', () => {
  it('orders threads newest first by position, once each, with a cursor past the page when there is more', () => {
    const merged = mergeLists('thread.list', [part([['a', 90], ['c', 50]], false), part([['b', 70], ['a', 90]], false)], 2, 1 << 20);
    expect((merged.threads as Array<{ id: string }>).map(({ id }) => id)).toEqual(['a', 'b']);
    expect(decodePosition('threads', merged.nextCursor as string)).toBe(70);
    const last = mergeLists('thread.list', [part([['c', 50]], false)], 2, 1 << 20);
    expect(last.nextCursor).toBeNull();
  });

  it('lists nothing past where a part that has more stopped, so the next page skips nothing that part left out', () => {
    // One engine stopped at 100 (its budget), holding 90 and 80 back; the other has 95 and 85.
    const merged = mergeLists('thread.list', [part([['a', 100]], true), part([['b', 95], ['c', 85]], false)], 10, 1 << 20);
    expect((merged.threads as Array<{ id: string }>).map(({ id }) => id)).toEqual(['a']);
    expect(decodePosition('threads', merged.nextCursor as string)).toBe(100);
  });

  it('orders approvals by thread and id, and keeps to the byte budget', () => {
    const approval = (threadId: string, id: string) => ({ threadId, id, detail: 'x'.repeat(100) });
    const merged = mergeLists('approval.list', [{ result: { approvals: [approval('t2', 'a1')], nextCursor: null }, positions: [] }, { result: { approvals: [approval('t1', 'a9'), approval('t3', 'a1')], nextCursor: null }, positions: [] }], 10, 300);
    expect((merged.approvals as Array<{ threadId: string }>).map(({ threadId }) => threadId)).toEqual(['t1', 't2']);
    expect(merged.nextCursor).not.toBeNull();
  });
});
