import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointRefName, parseCheckpointRefName } from '../../adapters/git/checkpointRefs.ts';
import { Checkpoints } from '../../adapters/git/index.ts';
import { makeRepo, type TestRepo } from './gitRepoFixture.ts';

const isValidRef = (ref: string) => {
  try {
    execFileSync('git', ['check-ref-format', ref], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

const oddIds = [
  'a'.repeat(128),
  '.'.repeat(128),
  '🧵'.repeat(128),
  '.',
  '..',
  'a..b',
  '/',
  'a/b/c',
  '/leading and trailing/',
  'with space',
  '~^:?*[\\',
  '@{upstream}',
  '@',
  'x.lock',
  'ends with dot.',
  '-leading-dash',
  '%41 literal percent',
  '+plus+',
  'tab\tnew\nline\u0000nul\u007fdel',
  'héllo wörld ∑ 中文 🎉 👩‍👩‍👧',
  'before',
];

describe('checkpoint ref names', () => {
  it('are valid refs for odd ids and decode back to them', () => {
    for (const threadId of oddIds) {
      for (const turnId of [oddIds[0]!, oddIds[2]!, threadId]) {
        const ref = checkpointRefName(threadId, turnId, 'after');
        expect(parseCheckpointRefName(ref)).toEqual({ threadId, turnId, which: 'after' });
      }
      expect(isValidRef(checkpointRefName(threadId, threadId, 'before')), threadId).toBe(true);
    }
  });

  it('keeps plain ids readable', () => {
    expect(checkpointRefName('thr_01H-x', 'turn9', 'before')).toBe('refs/turnloom/checkpoints/thr_01H-x/turn9/before');
    expect(checkpointRefName('a.b', 'c/d', 'after')).toBe('refs/turnloom/checkpoints/a%2Eb/c%2Fd/after');
  });

  it('round-trips any well-formed Unicode id of up to 128 code points', () => {
    const id = fc.string({ unit: 'binary', minLength: 1, maxLength: 128 });
    fc.assert(
      fc.property(id, id, fc.constantFrom('before' as const, 'after' as const), (threadId, turnId, which) => {
        const ref = checkpointRefName(threadId, turnId, which);
        expect(parseCheckpointRefName(ref)).toEqual({ threadId, turnId, which });
        // Loose refs are files: no component may exceed the file-name limit.
        expect(Math.max(...ref.split('/').map((part) => part.length))).toBeLessThanOrEqual(201);
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(id, id, (threadId, turnId) => isValidRef(checkpointRefName(threadId, turnId, 'before'))),
      { numRuns: 40 },
    );
  });

  it('refuses ids that cannot be encoded reversibly', () => {
    expect(() => checkpointRefName('', 'turn', 'before')).toThrow(/must not be empty/);
    expect(() => checkpointRefName('thread', 'lone \uD800 surrogate', 'before')).toThrow(/not well-formed Unicode/);
  });

  it('ignores refs it did not write', () => {
    for (const ref of [
      'refs/heads/main',
      'refs/turnloom/checkpoints/only-one/before',
      'refs/turnloom/checkpoints/a/b/c/before',
      'refs/turnloom/checkpoints/a/b/sideways',
      'refs/turnloom/checkpoints/a+/b/before',
      'refs/turnloom/checkpoints/a%ZZ/b/before',
      'refs/turnloom/checkpoints/a%C3/b/before',
      'refs/turnloom/checkpoints/a.b/c/before',
    ]) {
      expect(parseCheckpointRefName(ref), ref).toBeNull();
    }
  });
});

describe('Checkpoints.list', () => {
  let made: TestRepo;
  let checkpoints: Checkpoints;

  beforeAll(async () => {
    made = makeRepo();
    made.write('file.txt', 'x\n');
    checkpoints = (await Checkpoints.open(made.path))!;
  });
  afterAll(() => made.remove());

  it('decodes odd ids back from real refs, sorted by ref name, per thread or all', async () => {
    const captured = [];
    for (const [index, threadId] of oddIds.entries()) {
      captured.push(await checkpoints.capture(threadId, oddIds[(index + 3) % oddIds.length]!, index % 2 === 0 ? 'before' : 'after'));
    }
    captured.push(await checkpoints.capture('a.b', 'c', 'before'), await checkpoints.capture('a.b', 'c', 'after'));
    made.git('update-ref', 'refs/turnloom/checkpoints/not-ours/before', captured[0]!.commit);

    for (const ref of captured) expect(made.git('rev-parse', '--verify', ref.ref).trim()).toBe(ref.commit);
    const all = await checkpoints.list();
    const byRefName = [...captured].sort((left, right) => (Buffer.from(left.ref) < Buffer.from(right.ref) ? -1 : 1));
    expect(all).toEqual(byRefName);
    expect(await checkpoints.list('a.b')).toEqual([
      { threadId: 'a.b', turnId: 'c', which: 'after', ref: 'refs/turnloom/checkpoints/a%2Eb/c/after', commit: captured.at(-1)!.commit },
      { threadId: 'a.b', turnId: 'c', which: 'before', ref: 'refs/turnloom/checkpoints/a%2Eb/c/before', commit: captured.at(-2)!.commit },
    ]);
    expect(await checkpoints.list('🧵'.repeat(128))).toEqual(captured.filter(({ threadId }) => threadId === '🧵'.repeat(128)));
    expect(await checkpoints.list('a')).toEqual([]);
  });
});
