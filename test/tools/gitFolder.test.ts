import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkspaceTools } from '../../adapters/tools/index.ts';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, stdio: 'ignore' });

describe("write and edit never change a repository's git folder", () => {
  const folders = new TempFolders();
  let root: string;
  let tools: WorkspaceTools;
  beforeEach(() => {
    root = folders.make('turnloom-gitfolder-');
    git(root, 'init', '-q');
    // A nested repository, a bare one, and a linked checkout whose `.git` file points at a git folder of any name.
    git(root, 'init', '-q', 'nested');
    git(root, 'init', '-q', '--bare', 'store');
    writeTree(root, { 'linked/.git': 'gitdir: ../store\n', 'src/app.ts': 'app\n' });
    symlinkSync(path.join(root, '.git', 'hooks'), path.join(root, 'hooks-link'));
    symlinkSync(path.join(root, '.git', 'config'), path.join(root, 'config-link'));
    symlinkSync(path.join(root, '.git', 'hooks', 'not-yet'), path.join(root, 'dangling-hook-link'));
    tools = toolsAt(root);
  });
  afterEach(() => folders.removeAll());

  /** Every file under the git folders, with its bytes: none may change. */
  const gitFolders = () =>
    Object.fromEntries(
      ['.git', 'nested/.git', 'store', 'linked/.git'].flatMap((folder) =>
        execFileSync('find', [path.join(root, folder), '-type', 'f'], { encoding: 'utf8' })
          .split('\n')
          .filter(Boolean)
          .map((file) => [file, readFileSync(file, 'utf8')]),
      ),
    );

  const refused: Array<[string, string, string]> = [
    ['its config', '.git/config', '.git'],
    ['a hook', '.git/hooks/pre-commit', '.git'],
    ['a new folder in it', '.git/info/more/x', '.git'],
    ['it in capitals', '.GIT/config', '.GIT'],
    ['it in mixed case', '.Git/hooks/post-index-change', '.Git'],
    ['it with a character HFS+ ignores', '.g\u200cit/config', '.g\u200cit'],
    ['it with a trailing dot NTFS drops', '.git./config', '.git.'],
    ['it by its NTFS short name', 'git~1/config', 'git~1'],
    ['it through ..', 'src/../.git/config', '.git'],
    ['it by an absolute path', '{root}/.git/HEAD', '.git'],
    ['a nested repository’s', 'nested/.git/config', 'nested/.git'],
    ['a `.git` file (where a linked checkout’s git folder is)', 'linked/.git', 'linked/.git'],
    ['the git folder a `.git` file points to, whatever its name', 'store/config', 'store'],
    ['a bare repository’s hooks', 'store/hooks/pre-commit', 'store'],
    ['a file through a symlinked folder into it', 'hooks-link/pre-commit', '.git'],
    ['a symlink to its config', 'config-link', '.git'],
    ['a dangling symlink into it', 'dangling-hook-link', '.git'],
  ];

  it.each(refused)('write refuses %s, saying why', async (_, written, folder) => {
    const before = gitFolders();
    const target = written.replace('{root}', root);
    expect(await run(tools, 'write', { path: target, content: '[core]\n\tfsmonitor = "touch pwned"\n' })).toEqual({
      output: `path ${JSON.stringify(target)} is inside a repository's .git folder (${folder}), which only git may change; write and edit refuse it in every mode`,
      isError: true,
    });
    expect(gitFolders()).toEqual(before);
    expect(existsSync(path.join(root, '.git', 'hooks', 'not-yet'))).toBe(false);
    expect(existsSync(path.join(root, '.git', 'info', 'more'))).toBe(false);
  });

  it.each(refused.filter(([, written]) => ['.git/config', '.GIT/config', 'linked/.git', 'store/config', 'config-link'].includes(written)))('edit refuses %s', async (_, written, folder) => {
    const before = gitFolders();
    const { output, isError } = await run(tools, 'edit', { path: written, oldText: '[core]', newText: '[core]\n\tfsmonitor = "touch pwned"' });
    expect(isError).toBe(true);
    expect(output).toContain(`is inside a repository's .git folder (${folder}), which only git may change`);
    expect(gitFolders()).toEqual(before);
  });

  it('writes the files of the work tree git reads, which name no code that checkpoints run: .gitattributes, .gitmodules, .gitignore', async () => {
    for (const file of ['.gitattributes', '.gitmodules', '.gitignore', 'nested/.gitattributes', '.github/workflows/ci.yml', 'my.git/notes.txt', '.git-blame-ignore-revs']) {
      expect(await run(tools, 'write', { path: file, content: '* filter=x\n' })).toEqual({ output: `wrote 11 bytes to ${file}`, isError: false });
    }
    writeFileSync(path.join(root, 'src', 'HEAD'), 'a file named HEAD does not make a git folder\n');
    expect((await run(tools, 'write', { path: 'src/objects.txt', content: 'x' })).isError).toBe(false);
  });

  it('still reads the git folder, directly or through a symlink', async () => {
    expect((await run(tools, 'read', { path: '.git/HEAD' })).output).toMatch(/ref: refs\/heads\//);
    expect((await run(tools, 'read', { path: 'config-link' })).isError).toBe(false);
  });
});
