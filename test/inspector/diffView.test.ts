import { describe, expect, it } from 'vitest';

interface DiffLine { kind: string; text: string; old: number | null; new: number | null }
interface DiffFile { path: string; notes: string[]; lines: DiffLine[]; additions: number; deletions: number }
// The page's plain ES module, checked by its own tsconfig (inspector/page/tsconfig.json); named through a variable so this one does not look into it.
const pageModule = '../../inspector/page/diffView.js';
const { parsePatch } = (await import(pageModule)) as { parsePatch: (patch: string) => DiffFile[] };

const checkpointPatch = [
  'diff --git a/src/a.js b/src/a.js',
  'index 1111111..2222222 100644',
  '--- a/src/a.js',
  '+++ b/src/a.js',
  '@@ -3,3 +3,3 @@ function a() {',
  ' keep',
  '--- a removed line that looks like a header',
  '+++ an added line that looks like one',
  ' end',
  'diff --git a/new.txt b/new.txt',
  'new file mode 100644',
  'index 0000000..3333333',
  '--- /dev/null',
  '+++ b/new.txt',
  '@@ -0,0 +1 @@',
  '+fresh',
  '\\ No newline at end of file',
  'diff --git "a/odd\\tname" "b/odd\\tname"',
  'deleted file mode 100644',
  '--- "a/odd\\tname"',
  '+++ /dev/null',
  '@@ -1 +0,0 @@',
  '-gone',
  '',
].join('\n');

describe('the page’s patch reader', () => {
  it('splits a checkpoint’s patch into files with numbered lines, counts and git’s notes, plumbing left out', () => {
    const files = parsePatch(checkpointPatch);
    expect(files.map((file) => [file.path, file.additions, file.deletions])).toEqual([
      ['src/a.js', 1, 1],
      ['new.txt', 1, 0],
      ['odd\tname', 0, 1],
    ]);
    expect(files[0]!.lines).toEqual([
      { kind: 'hunk', text: '@@ -3,3 +3,3 @@ function a() {', old: null, new: null },
      { kind: 'ctx', text: 'keep', old: 3, new: 3 },
      { kind: 'del', text: '-- a removed line that looks like a header', old: 4, new: null },
      { kind: 'add', text: '++ an added line that looks like one', old: null, new: 4 },
      { kind: 'ctx', text: 'end', old: 5, new: 5 },
    ]);
    expect(files[0]!.notes).toEqual([]);
    expect(files[1]!.notes).toEqual(['new file mode 100644']);
    expect(files[1]!.lines.at(-1)).toEqual({ kind: 'note', text: '\\ No newline at end of file', old: null, new: null });
    expect(files[2]!.notes).toEqual(['deleted file mode 100644']);
  });

  it('reads an approval’s preview of one file (no git line), a cut one too', () => {
    const files = parsePatch('--- a/greet.js\n+++ b/greet.js\n@@ -1,2 +1,2 @@\n-old\n+new\n same\n… 40 more lines not shown\n');
    expect(files).toHaveLength(1);
    expect(files[0]).toMatchObject({ path: 'greet.js', additions: 1, deletions: 1 });
    expect(files[0]!.lines.at(-1)).toMatchObject({ kind: 'note', text: '… 40 more lines not shown' });
    expect(parsePatch('--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+x\n')[0]).toMatchObject({ path: 'made.txt', additions: 1 });
    expect(parsePatch('')).toEqual([]);
  });
});
