import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../adapters/git/index.ts';
import { makeRepo, type TestRepo } from './gitRepoFixture.ts';

const timed = async <T>(label: string, work: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  console.log(`${label}: ${ms.toFixed(0)} ms`);
  // Generous on purpose: the machine is shared; this only catches a capture that rehashes or rewrites everything badly.
  expect(ms).toBeLessThan(30_000);
  return result;
};

describe('a 10,000-file repository', () => {
  let made: TestRepo;

  beforeAll(() => {
    made = makeRepo();
    for (let dir = 0; dir < 100; dir++) {
      for (let file = 0; file < 100; file++) made.write(`d${dir}/f${file}.txt`, `file ${dir}/${file}\n`);
    }
    made.git('add', '-A');
    made.git('commit', '-qm', 'ten thousand files');
  });
  afterAll(() => made.remove());

  it('captures, diffs and undoes in reasonable time', async () => {
    for (let index = 0; index < 10; index++) {
      made.write(`d${index * 7}/f${index}.txt`, `modified ${index}\n`);
      made.write(`added/n${index}.txt`, `added ${index}\n`);
    }
    const checkpoints = (await Checkpoints.open(made.path))!;
    const first = await timed('first capture', () => checkpoints.capture('big', 'turn', 'before'));
    made.write('d99/f99.txt', 'one more change\n');
    const second = await timed('second capture', () => checkpoints.capture('big', 'turn', 'after'));

    expect(made.git('ls-tree', '-r', '--name-only', first.commit).split('\n').filter(Boolean)).toHaveLength(10_010);
    const { files } = await timed('diff', () => checkpoints.diff(first.commit, second.commit));
    expect(files.map(({ path }) => path)).toEqual(['d99/f99.txt']);
    const { changes: restored } = await timed('undo', () => checkpoints.undo([{ turnId: 'turn', before: first.commit, after: second.commit }], { saveAs: { threadId: 'big', id: 'revert-1' }, force: false }));
    expect(restored.files.map(({ path }) => path)).toEqual(['d99/f99.txt']);
    expect(made.read('d99/f99.txt')).toBe('file 99/99\n');
  });
});
