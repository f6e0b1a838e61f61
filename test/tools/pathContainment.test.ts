import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkspaceTools } from '../../adapters/tools/index.ts';
import { TempFolders, run, toolsAt, writeTree } from './toolFixture.ts';

describe('workspace paths', () => {
  const folders = new TempFolders();
  let root: string;
  let outside: string;
  let tools: WorkspaceTools;
  beforeEach(() => {
    root = folders.make('turnloom-root-');
    outside = folders.make('turnloom-outside-');
    writeTree(root, { 'inside.txt': 'inside\n' });
    writeTree(outside, { 'secret.txt': 'secret\n' });
    symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'secret-link.txt'));
    symlinkSync(outside, path.join(root, 'outside-dir'));
    symlinkSync(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling-link.txt'));
    symlinkSync(path.join(root, 'inside.txt'), path.join(root, 'inside-link.txt'));
    tools = toolsAt(root);
  });
  afterEach(() => folders.removeAll());

  // Built before the folders exist: `{outside}` stands for the outside folder.
  const escapes: Array<[string, string]> = [
    ['a parent path', '../secret.txt'],
    ['a parent path in the middle', 'sub/../../secret.txt'],
    ['an absolute path outside', '{outside}/secret.txt'],
    ['a symlink to a file outside', 'secret-link.txt'],
    ['a file under a symlinked folder outside', 'outside-dir/secret.txt'],
    ['a dangling symlink to outside', 'dangling-link.txt'],
  ];

  const where = (target: string): string => target.replace('{outside}', outside);

  it.each(escapes)('read refuses %s', async (_, written) => {
    const target = where(written);
    expect(await run(tools, 'read', { path: target })).toEqual({ output: `path ${JSON.stringify(target)} is outside the workspace`, isError: true });
  });

  it.each(escapes)('write refuses %s and writes nothing outside', async (_, written) => {
    const target = where(written);
    expect(await run(tools, 'write', { path: target, content: 'pwned\n' })).toEqual({ output: `path ${JSON.stringify(target)} is outside the workspace`, isError: true });
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
    expect(existsSync(path.join(outside, 'not-yet.txt'))).toBe(false);
  });

  it('write refuses a new file under a symlinked folder outside', async () => {
    expect((await run(tools, 'write', { path: 'outside-dir/new/file.txt', content: 'x' })).isError).toBe(true);
    expect(existsSync(path.join(outside, 'new'))).toBe(false);
  });

  it('edit, list, glob and grep refuse paths outside too', async () => {
    expect((await run(tools, 'edit', { path: 'secret-link.txt', oldText: 'secret', newText: 'pwned' })).output).toBe('path "secret-link.txt" is outside the workspace');
    expect((await run(tools, 'list', { path: 'outside-dir' })).output).toBe('path "outside-dir" is outside the workspace');
    expect((await run(tools, 'glob', { pattern: '*', path: '..' })).output).toBe('path ".." is outside the workspace');
    expect((await run(tools, 'grep', { pattern: 'secret', path: outside })).output).toBe(`path ${JSON.stringify(outside)} is outside the workspace`);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
  });

  it('follows symlinks that stay inside, and takes absolute paths inside the root', async () => {
    expect((await run(tools, 'read', { path: 'inside-link.txt' })).output).toBe('     1\tinside\n');
    expect((await run(tools, 'read', { path: path.join(root, 'inside.txt') })).output).toBe('     1\tinside\n');
    expect((await run(tools, 'read', { path: 'sub/../inside.txt' })).output).toBe('     1\tinside\n');
  });

  it('works under a root given through a symlink, taking absolute paths through either', async () => {
    const linkedRoot = path.join(outside, 'root-link');
    symlinkSync(root, linkedRoot);
    const linked = toolsAt(linkedRoot);
    expect((await run(linked, 'read', { path: path.join(linkedRoot, 'inside.txt') })).output).toBe('     1\tinside\n');
    expect((await run(linked, 'read', { path: path.join(root, 'inside.txt') })).output).toBe('     1\tinside\n');
    expect((await run(linked, 'read', { path: path.join(outside, 'secret.txt') })).isError).toBe(true);
  });

  it('classifies by the path as written, relative to the root when inside', () => {
    expect(tools.classify({ callId: 'c', name: 'write', input: { path: path.join(root, 'a/b.ts'), content: '' } })).toEqual({ kind: 'edit', subject: 'a/b.ts' });
    expect(tools.classify({ callId: 'c', name: 'read', input: { path: path.join(outside, 'secret.txt') } })).toEqual({ kind: 'read', subject: path.join(outside, 'secret.txt') });
  });
});
