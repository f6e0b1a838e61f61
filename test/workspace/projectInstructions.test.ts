import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryState } from '../../adapters/git/index.ts';
import { INSTRUCTIONS_LIMITS, projectInstructions } from '../../adapters/workspace/index.ts';
import { tempDir } from '../support/tempDir.ts';

const dir = tempDir('turnloom-instructions-');
afterAll(() => dir.remove());
let n = 0;

/** A repository `repo` with a package folder `repo/a/b`, the workspace. */
function layout() {
  const repo = join(dir.path, `repo${++n}`);
  const workspace = join(repo, 'a', 'b');
  mkdirSync(workspace, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'trunk', repo]);
  return { repo, workspace };
}

describe('project instructions', () => {
  it('reads AGENTS.md (else CLAUDE.md) from the repository root down to the workspace, then the user file', async () => {
    const { repo, workspace } = layout();
    writeFileSync(join(repo, 'AGENTS.md'), 'root');
    writeFileSync(join(repo, 'CLAUDE.md'), 'not read: the root has an AGENTS.md');
    writeFileSync(join(repo, 'a', 'CLAUDE.md'), 'middle');
    writeFileSync(join(workspace, 'AGENTS.md'), 'workspace');
    const user = join(dir.path, `user${n}.md`);
    writeFileSync(user, 'mine');
    const state = await repositoryState(workspace);
    expect(state).toMatchObject({ branch: 'trunk' });
    const files = await projectInstructions({ workspace, repositoryRoot: state!.root, userFile: user });
    expect(files.map((file) => [file.path, file.text])).toEqual([
      ['../../AGENTS.md', 'root'],
      ['../CLAUDE.md', 'middle'],
      ['AGENTS.md', 'workspace'],
      [user, 'mine'],
    ]);
  });

  it('follows no symbolic link: the model cannot put a file from elsewhere into the prompt', async () => {
    const { repo, workspace } = layout();
    const secret = join(dir.path, `secret${n}`);
    writeFileSync(secret, 'SECRET=hunter2');
    symlinkSync(secret, join(workspace, 'AGENTS.md'));
    writeFileSync(join(repo, 'AGENTS.md'), 'root');
    const files = await projectInstructions({ workspace, repositoryRoot: repo, userFile: null });
    expect(files.map((file) => file.text)).toEqual(['root']);
  });

  it('cuts a long file and says so, and keeps the total bounded', async () => {
    const { repo, workspace } = layout();
    writeFileSync(join(repo, 'AGENTS.md'), 'x'.repeat(INSTRUCTIONS_LIMITS.perFile + 500));
    writeFileSync(join(repo, 'a', 'AGENTS.md'), 'y'.repeat(INSTRUCTIONS_LIMITS.perFile + 500));
    writeFileSync(join(workspace, 'AGENTS.md'), 'never reached');
    const files = await projectInstructions({ workspace, repositoryRoot: repo, userFile: null });
    expect(files.map((file) => file.cut)).toEqual([true, true]);
    expect(files[0]!.text).toContain(`[cut: ../../AGENTS.md is ${INSTRUCTIONS_LIMITS.perFile + 500} bytes; only its first ${INSTRUCTIONS_LIMITS.perFile} are given]`);
    expect(files.reduce((total, file) => total + file.text.length, 0)).toBeLessThan(INSTRUCTIONS_LIMITS.total + 500);
  });

  it('outside a repository, reads the workspace folder only', async () => {
    const workspace = join(dir.path, `plain${++n}`, 'inner');
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(dir.path, `plain${n}`, 'AGENTS.md'), 'parent, not a repository');
    writeFileSync(join(workspace, 'CLAUDE.md'), 'here');
    expect(await repositoryState(workspace)).toBeNull();
    const files = await projectInstructions({ workspace, repositoryRoot: null, userFile: null });
    expect(files.map((file) => file.text)).toEqual(['here']);
  });
});
