import { describe, expect, it } from 'vitest';
import { type CheckpointDiff, DEFAULT_ENVIRONMENT, type DomainEvent, defaultPermissions } from '../../domain/index.ts';
import { rebuildView } from '../../protocol/projector.ts';
import { sideWorkDue } from '../../services/worker/sideWorkDue.ts';
import { sideLineOf, sideWorkRequest } from '../../services/worker/sideWorkRequest.ts';
import { turnEvents } from '../support/engineFixture.ts';

const created: DomainEvent = { type: 'thread.created', title: 'New thread', workspace: null, owner: null, environment: DEFAULT_ENVIRONMENT, permissions: defaultPermissions() };
const diff: CheckpointDiff = {
  files: [{ path: 'src/session.js', status: 'modified', additions: 2, deletions: 1, binary: false }],
  filesChanged: 1,
  additions: 2,
  deletions: 1,
  filesOmitted: 0,
  patch: 'diff --git a/src/session.js b/src/session.js\n--- a/src/session.js\n+++ b/src/session.js\n@@ -1 +1,2 @@\n-old\n+new\n+more\n',
  truncated: false,
};

/** A turn asked with `text` that ends `completed` (or `failed`), having changed the files of `changes`. */
function turn(turnId: string, text: string, end: 'completed' | 'failed', changes: CheckpointDiff | null = null): DomainEvent[] {
  const t = turnEvents(turnId);
  const tree = { ref: `refs/x/${turnId}`, commit: 'a'.repeat(40) };
  return [
    { type: 'turn.requested', turnId, input: { text }, provider: { name: 'scripted', model: null }, mode: null },
    t.started(),
    ...(changes ? [{ type: 'checkpoint.captured', turnId, side: 'before', ...tree, diff: null } as DomainEvent, { type: 'checkpoint.captured', turnId, side: 'after', ...tree, diff: changes } as DomainEvent] : []),
    end === 'completed' ? t.completed() : { type: 'turn.failed', turnId, error: 'boom' },
  ];
}

const viewOf = (...events: DomainEvent[][]) =>
  rebuildView(
    'th1',
    [created, ...events.flat()].map((event, index) => ({ threadSeq: index + 1, at: 1_000 + index, event })),
  );

describe('side work: what is due after a turn', () => {
  it('a title after the thread’s first completed turn, from the user’s first prompt', () => {
    const view = viewOf(turn('t0', 'the first try', 'failed'), turn('t1', 'second try', 'completed'));
    expect(sideWorkDue(view, 't1')).toEqual([{ kind: 'title', turnId: 't1', input: 'the first try' }]);
  });

  it('no title after a later completed turn, nor once the thread was renamed', () => {
    expect(sideWorkDue(viewOf(turn('t1', 'one', 'completed'), turn('t2', 'two', 'completed')), 't2')).toEqual([]);
    expect(sideWorkDue(viewOf([{ type: 'thread.renamed', title: 'Mine' }], turn('t1', 'one', 'completed')), 't1')).toEqual([]);
  });

  it('a summary of each completed turn that changed files, from its diff, files first', () => {
    const view = viewOf(turn('t1', 'one', 'completed'), turn('t2', 'two', 'completed', diff));
    const [task] = sideWorkDue(view, 't2');
    expect(task).toMatchObject({ kind: 'summary', turnId: 't2' });
    expect(task!.input).toBe(`Files changed:\nM src/session.js +2 -1\n\n${diff.patch}`);
    expect(sideWorkDue(viewOf(turn('t1', 'one', 'completed', { ...diff, files: [], filesChanged: 0, additions: 0, deletions: 0, patch: '' })), 't1').map((due) => due.kind)).toEqual(['title']);
  });

  it('a summary of a turn whose list of files was cut starts with how large the change is and how many files are listed', () => {
    const cut: CheckpointDiff = { ...diff, filesChanged: 16_000, additions: 16_001, deletions: 1, filesOmitted: 15_999, truncated: true };
    const [task] = sideWorkDue(viewOf(turn('t1', 'one', 'completed'), turn('t2', 'two', 'completed', cut)), 't2');
    expect(task!.input).toBe(`Files changed: 16000, +16001 -1 in all; the first 1 are:\nM src/session.js +2 -1\n\n${diff.patch}`);
    // A diff recorded before the totals existed counts its list.
    const { filesChanged: _files, additions: _added, deletions: _removed, filesOmitted: _omitted, ...legacy } = diff;
    expect(sideWorkDue(viewOf(turn('t1', 'one', 'completed'), turn('t2', 'two', 'completed', legacy as CheckpointDiff)), 't2')[0]!.input).toBe(`Files changed:\nM src/session.js +2 -1\n\n${diff.patch}`);
  });

  it('nothing after a turn that did not complete', () => {
    expect(sideWorkDue(viewOf(turn('t1', 'one', 'failed', diff)), 't1')).toEqual([]);
  });
});

describe('side work: the call and its answer', () => {
  it('asks with a short instruction, no tools, and the input cut to a bounded size', () => {
    const request = sideWorkRequest({ kind: 'summary', turnId: 't1', input: 'x'.repeat(50_000) }, 'gpt-x');
    expect(request).toMatchObject({ model: 'gpt-x', tools: [], sideWork: 'summary', system: expect.stringContaining('one line') });
    const [message] = request.messages;
    expect(message).toMatchObject({ role: 'user' });
    expect((message as { text: string }).text.length).toBe(12_000);
    expect((message as { text: string }).text.endsWith('[… cut]')).toBe(true);
  });

  it('takes one line from what the model says: no label, quotes or line breaks, within the limit', () => {
    expect(sideLineOf('title', '  Title: "Fix the\nlogin race."  ')).toBe('Fix the login race');
    expect(sideLineOf('summary', 'Shares a login\tthat is under way.')).toBe('Shares a login that is under way.');
    expect(sideLineOf('title', ' \n ')).toBeNull();
    const long = sideLineOf('title', 'word '.repeat(100))!;
    expect(long).toHaveLength(120);
    expect(long.endsWith('…')).toBe(true);
  });
});
