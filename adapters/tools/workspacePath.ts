import { realpathSync, statSync } from 'node:fs';
import { readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './toolError.ts';

/** A path inside the workspace: `real` to open, `relative` (to the root) to show. */
export interface WorkspacePath {
  real: string;
  relative: string;
}

const isInside = (relative: string): boolean => relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);

const maxLinkHops = 40;

/**
 * The real path of `file`, which need not exist: its nearest existing
 * ancestor is resolved and the rest appended. A dangling symlink is followed
 * to where it points, since writing through it would create the file there.
 */
async function realpathOfMaybeMissing(file: string, hops = 0): Promise<string> {
  if (hops > maxLinkHops) throw new ToolError(`too many levels of symbolic links in ${file}`);
  try {
    return await realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const parent = path.dirname(file);
  if (parent === file) return file;
  const realParent = await realpathOfMaybeMissing(parent, hops);
  const target = await readlink(file).catch(() => null);
  return target === null ? path.join(realParent, path.basename(file)) : realpathOfMaybeMissing(path.resolve(realParent, target), hops + 1);
}

/** Code points HFS+ ignores in names, so `.g\u200cit` is `.git` there (the list git itself uses). */
const hfsIgnored = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * Whether a file system may take `name` for `.git`: in any case, without
 * what HFS+ ignores, without the trailing dots and spaces and the `:stream`
 * NTFS drops, or as its NTFS short name; git refuses all of these in a
 * tree, for the same reason.
 */
function isDotGit(name: string): boolean {
  const folded = name.replace(hfsIgnored, '').toLowerCase().split(':')[0]!.replace(/[. ]+$/, '');
  return folded === '.git' || folded === 'git~1';
}

const isKind = async (file: string, kind: 'file' | 'folder'): Promise<boolean> => {
  const stats = await stat(file).catch(() => null);
  return kind === 'file' ? stats?.isFile() === true : stats?.isDirectory() === true;
};

/** git's own test of a git folder: a HEAD, and objects/ and refs/ here or in the folder `commondir` names (a linked checkout's). */
async function isGitFolder(folder: string): Promise<boolean> {
  if (!(await isKind(path.join(folder, 'HEAD'), 'file'))) return false;
  if (await isKind(path.join(folder, 'commondir'), 'file')) return true;
  return (await isKind(path.join(folder, 'objects'), 'folder')) && (await isKind(path.join(folder, 'refs'), 'folder'));
}

/** The leading part of `relative` (`/`-joined as shown) up to its first component named like `.git`, or null. */
function dotGitPrefix(relative: string): string | null {
  const components = relative.split(path.sep);
  const at = components.findIndex(isDotGit);
  return at === -1 ? null : components.slice(0, at + 1).join('/');
}

/**
 * The folder the tools work in. Every path a model gives is checked twice:
 * by its text (no `..` or absolute path out) and by where it really leads
 * (no symlink out), because either alone can be fooled.
 */
export class Workspace {
  /** The root as given, for absolute paths the model copies from it. */
  readonly root: string;
  readonly realRoot: string;
  /** The device the root is on: a file on another one is under a mount, which may show anything. */
  readonly device: number;

  /** Throws when `root` does not exist: a workspace is made for a folder that is there. */
  constructor(root: string) {
    this.root = path.resolve(root);
    this.realRoot = realpathSync(this.root);
    this.device = statSync(this.realRoot).dev;
  }

  /** Where `input` points by its text alone, under the real root; null when it leaves the workspace. */
  private lexical(input: string): string | null {
    if (!path.isAbsolute(input)) {
      const resolved = path.resolve(this.realRoot, input);
      return isInside(path.relative(this.realRoot, resolved)) ? resolved : null;
    }
    for (const base of [this.realRoot, this.root]) {
      const relative = path.relative(base, path.resolve(input));
      if (isInside(relative)) return path.join(this.realRoot, relative);
    }
    return null;
  }

  /** What a call touches, for the permission rules, without touching the disk: a relative path, or an absolute one outside. */
  subject(input: string): string {
    const lexical = this.lexical(input);
    return lexical === null ? path.resolve(this.realRoot, input) : path.relative(this.realRoot, lexical) || '.';
  }

  async resolve(input: string): Promise<WorkspacePath> {
    const lexical = this.lexical(input);
    const outside = new ToolError(`path ${JSON.stringify(input)} is outside the workspace`);
    if (lexical === null) throw outside;
    const real = await realpathOfMaybeMissing(lexical);
    if (!isInside(path.relative(this.realRoot, real))) throw outside;
    return { real, relative: path.relative(this.realRoot, lexical) || '.' };
  }

  /**
   * Like `resolve`, for a file to write: never inside a repository's git
   * folder, which holds the config, hooks and attributes git runs code
   * from. That is any path component named like `.git` (a git folder, or a
   * `.git` file pointing to one), by the path as written or where it really
   * leads (a symlink into one), and any folder that is a git folder by its
   * content, whatever its name (where a `.git` file points, a bare
   * repository).
   */
  async resolveWritable(input: string): Promise<WorkspacePath> {
    const target = await this.resolve(input);
    const refuse = (folder: string) =>
      new ToolError(`path ${JSON.stringify(input)} is inside a repository's .git folder (${folder}), which only git may change; write and edit refuse it in every mode`);
    const named = dotGitPrefix(target.relative) ?? dotGitPrefix(path.relative(this.realRoot, target.real));
    if (named !== null) throw refuse(named);
    for (let folder = path.dirname(target.real); isInside(path.relative(this.realRoot, folder)); folder = path.dirname(folder)) {
      if (await isGitFolder(folder)) throw refuse(this.show(folder));
      if (folder === this.realRoot) break;
    }
    return target;
  }

  /** `real` (a path under the real root, as the file system reports it) as the model should see it. */
  show(real: string): string {
    return path.relative(this.realRoot, real) || '.';
  }
}
