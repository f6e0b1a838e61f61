import { afterEach, describe, expect, it } from 'vitest';
import { type CheckpointDiff, type DomainEvent, type FileChange, fitChanges, jsonBytes, summarizeChanges } from '../../domain/index.ts';
import { type EngineFixture, createThread, openEngineFixture, record, startTurn, turnEvents } from '../support/engineFixture.ts';

/** What `npm install` adds: `count` one-line files, in path order. */
const added = (count: number): FileChange[] =>
  Array.from({ length: count }, (_, index) => ({ path: `node_modules/pkg-${String(index).padStart(5, '0')}/index.js`, status: 'added' as const, additions: 1, deletions: 0, binary: false }));

const diffOf = (files: FileChange[], patch: string): CheckpointDiff => ({ ...summarizeChanges(files), patch, truncated: false });

const LIMIT = 64 * 1024;

let fx: EngineFixture | undefined;
afterEach(async () => {
  await fx?.dispose();
  fx = undefined;
});

describe('changes larger than one event', () => {
  it('fitChanges keeps the first files, every total and the start of the patch, within the limit', () => {
    const files = added(8_000);
    const patch = files.map((file) => `diff --git a/${file.path} b/${file.path}\n+x\n`).join('');
    const fitted = fitChanges(diffOf(files, patch), LIMIT);
    expect(jsonBytes(fitted)).toBeLessThanOrEqual(LIMIT);
    expect(fitted).toMatchObject({ filesChanged: 8_000, additions: 8_000, deletions: 0, truncated: true });
    expect(fitted.files).toEqual(files.slice(0, fitted.files.length));
    expect(fitted.filesOmitted).toBe(8_000 - fitted.files.length);
    // Both were too large: each got about half of the room.
    expect(jsonBytes(fitted.files)).toBeGreaterThan(LIMIT * 0.4);
    expect(jsonBytes(fitted.patch)).toBeGreaterThan(LIMIT * 0.4);
    expect(fitted.patch.startsWith(patch.slice(0, 1_000))).toBe(true);
    expect(fitted.patch).toMatch(/\[… \d+ characters cut here: the changes were over \d+ bytes\]$/);
    // A small patch leaves its room to the list, and what fits is left as it is.
    const short = fitChanges(diffOf(files, 'tiny'), LIMIT);
    expect(short.patch).toBe('tiny');
    expect(jsonBytes(short.files)).toBeGreaterThan(LIMIT * 0.9);
    const small = diffOf(files.slice(0, 3), 'tiny');
    expect(fitChanges(small, LIMIT)).toBe(small);
  });

  it('the engine cuts an oversized checkpoint event into a smaller diff, never into a note in its place, and a revert of it is recorded', async () => {
    fx = await openEngineFixture({ maxEventBytes: LIMIT });
    const { engine } = fx;
    await engine.submit(createThread('big'));
    await engine.submit(startTurn('big', 'install'));
    const t = turnEvents('install');
    const tree = (side: string) => ({ ref: `refs/turnloom/checkpoints/big/install/${side}`, commit: side === 'before' ? 'a'.repeat(40) : 'b'.repeat(40) });
    const files = added(8_000);
    const events: DomainEvent[] = [
      t.sessionStarted(),
      t.started(),
      { type: 'checkpoint.captured', turnId: 'install', side: 'before', ...tree('before'), diff: null },
      { type: 'checkpoint.captured', turnId: 'install', side: 'after', ...tree('after'), diff: diffOf(files, 'p'.repeat(300_000)) },
      t.completed(),
    ];
    await engine.submit(record('big', 'install', events));

    const stored = engine.readEvents('big', 0, 100).filter(({ event }) => event.type === 'checkpoint.captured').at(-1)!.event as Extract<DomainEvent, { type: 'checkpoint.captured' }>;
    expect(jsonBytes(stored)).toBeLessThanOrEqual(LIMIT);
    expect(stored.diff).toMatchObject({ filesChanged: 8_000, additions: 8_000, truncated: true });
    expect(stored.diff!.files.length).toBeGreaterThan(0);
    expect(stored.diff!.files.length + stored.diff!.filesOmitted).toBe(8_000);
    const view = await engine.getThread('big');
    expect(view.turns.install!.checkpoint!.diff!.files).toEqual(stored.diff!.files);

    // A revert's list comes from the worker, and its files are back already: cut as well, never refused.
    await engine.submit({ type: 'checkpoint.revert', commandId: 'revert-big', threadId: 'big', turnId: 'install', by: 'me' });
    const { revertId } = (await engine.getThread('big')).revert!;
    await engine.submit({
      type: 'checkpoint.finishRevert',
      commandId: 'revert-big-done',
      threadId: 'big',
      revertId,
      changes: summarizeChanges(files.map((file) => ({ ...file, status: 'deleted', additions: 0, deletions: 1 }))),
      saved: tree('after'),
    });
    const revert = (await engine.getThread('big')).reverts[0]!;
    expect(revert).toMatchObject({ filesChanged: 8_000, additions: 0, deletions: 8_000 });
    expect(revert.files.length).toBeGreaterThan(0);
    expect(revert.files.length + revert.filesOmitted).toBe(8_000);
  });
});
