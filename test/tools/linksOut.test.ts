import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Workspace } from '../../adapters/tools/workspacePath.ts';
import type { WorkspaceTools } from '../../adapters/tools/index.ts';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

const hardLinked = (shown: string) =>
  `${shown} has 2 hard links, so writing it would also change the file under its other names, which may be outside the workspace; write and edit refuse it`;

describe('write and edit change no file outside the workspace through a hard link, a mount or a swapped symlink', () => {
  const folders = new TempFolders();
  let root: string;
  let outside: string;
  let tools: WorkspaceTools;
  beforeEach(() => {
    root = folders.make('turnloom-root-');
    outside = folders.make('turnloom-outside-');
    writeTree(outside, { 'secret.txt': 'secret\n' });
    writeTree(root, { 'inside.txt': 'inside\n' });
    // As a command could have made them, or as they came (a checkout, a copy with links).
    linkSync(path.join(outside, 'secret.txt'), path.join(root, 'hl'));
    linkSync(path.join(root, 'inside.txt'), path.join(root, 'inside-twin.txt'));
    tools = toolsAt(root);
  });
  afterEach(() => folders.removeAll());

  const secret = () => readFileSync(path.join(outside, 'secret.txt'), 'utf8');

  it('refuses to write or edit a file with more than one link, saying why, and the file outside stays as it was', async () => {
    expect(await run(tools, 'write', { path: 'hl', content: 'pwned\n' })).toEqual({ output: hardLinked('hl'), isError: true });
    expect(await run(tools, 'edit', { path: 'hl', oldText: 'secret', newText: 'pwned' })).toEqual({ output: hardLinked('hl'), isError: true });
    expect(secret()).toBe('secret\n');
    // Its other name may be inside as well: nothing tells where the others are.
    expect(await run(tools, 'write', { path: 'inside-twin.txt', content: 'x' })).toEqual({ output: hardLinked('inside-twin.txt'), isError: true });
    expect(readFileSync(path.join(root, 'inside.txt'), 'utf8')).toBe('inside\n');
  });

  it('still reads through a hard link (package stores such as pnpm’s link their files into node_modules)', async () => {
    expect(await run(tools, 'read', { path: 'hl' })).toEqual({ output: '     1\tsecret\n', isError: false });
  });

  it('does not follow a symlink swapped in, nor write a hard link swapped in, after the path was checked', async () => {
    const workspace = (tools as unknown as { workspace: Workspace }).workspace;
    // What a concurrent process could do between the check and the open, made to happen exactly there.
    let swap = () => {};
    for (const method of ['resolve', 'resolveWritable'] as const) {
      const original = (workspace[method] as Workspace['resolve'] | undefined)?.bind(workspace);
      if (original) {
        workspace[method] = async (input: string) => {
          const resolved = await original(input);
          swap();
          return resolved;
        };
      }
    }
    const swapped = path.join(root, 'swapped.txt');
    const swapFor = (make: (outsideFile: string, file: string) => void) => () => {
      unlinkSync(swapped);
      make(path.join(outside, 'secret.txt'), swapped);
    };
    for (const [how, make, refusal] of [
      ['a symlink', symlinkSync, 'swapped.txt is not a regular file'],
      ['a hard link', linkSync, hardLinked('swapped.txt').replace('2 hard links', '3 hard links')],
    ] as const) {
      for (const call of [
        { name: 'write', input: { path: 'swapped.txt', content: 'pwned\n' } },
        { name: 'edit', input: { path: 'swapped.txt', oldText: 'secret', newText: 'pwned' } },
      ]) {
        writeTree(root, { 'swapped.txt': 'mine\n' });
        swap = swapFor(make);
        expect(await run(tools, call.name, call.input), `${call.name} through ${how}`).toEqual({ output: refusal, isError: true });
        expect(secret()).toBe('secret\n');
        unlinkSync(swapped);
      }
    }
  });

  it('refuses a file on another device than the workspace (a mount inside it), and the file there stays as it was', async (context) => {
    const workspaceDevice = statSync(root).dev;
    const elsewhere = ['/dev/shm', '/run', '/var/tmp'].find((folder) => statSync(folder, { throwIfNoEntry: false })?.dev !== undefined && statSync(folder).dev !== workspaceDevice);
    if (elsewhere === undefined) {
      console.warn('no folder on a second device (tried /dev/shm, /run, /var/tmp): the other-device case is not tested');
      return context.skip('no second device');
    }
    const shared = mkdtempSync(path.join(elsewhere, 'turnloom-shared-'));
    try {
      writeTree(shared, { 'shared.txt': 'shared\n' });
      mkdirSync(path.join(root, 'mounted'));
      const script = fileURLToPath(new URL('./runToolsScript.ts', import.meta.url));
      const calls = [
        { name: 'write', input: { path: 'mounted/shared.txt', content: 'pwned\n' } },
        { name: 'edit', input: { path: 'mounted/shared.txt', oldText: 'shared', newText: 'pwned' } },
        { name: 'write', input: { path: 'mounted/new/file.txt', content: 'new\n' } },
        { name: 'read', input: { path: 'mounted/shared.txt' } },
      ];
      // A bind mount that only the tools' own process sees: a private mount namespace, gone with it.
      const child = spawnSync(
        'unshare',
        ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$2" && exec "$3" --import tsx "$4" "$5"', 'sh', shared, path.join(root, 'mounted'), process.execPath, script, JSON.stringify({ root, calls })],
        { encoding: 'utf8' },
      );
      if (child.status !== 0 && /mount|unshare/.test(child.stderr) && !child.stdout) {
        console.warn(`cannot mount a folder of ${elsewhere} inside the workspace here (${child.stderr.trim()}): the other-device case is not tested`);
        return context.skip('no mount');
      }
      const onAnotherDevice = (shown: string) =>
        `${shown} is on another device than the workspace (something mounted inside it, which may be shared with anywhere); write and edit refuse it`;
      expect(JSON.parse(child.stdout)).toEqual([
        { output: onAnotherDevice('mounted/shared.txt'), isError: true },
        { output: onAnotherDevice('mounted/shared.txt'), isError: true },
        { output: onAnotherDevice('mounted/new/file.txt'), isError: true },
        { output: '     1\tshared\n', isError: false },
      ]);
      expect(readFileSync(path.join(shared, 'shared.txt'), 'utf8')).toBe('shared\n');
      expect(statSync(path.join(shared, 'new'), { throwIfNoEntry: false })).toBeUndefined();
    } finally {
      rmSync(shared, { recursive: true, force: true });
    }
  });
});
