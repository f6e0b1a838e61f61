import { realpathSync } from 'node:fs';
import { readlink, realpath } from 'node:fs/promises';
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

/**
 * The folder the tools work in. Every path a model gives is checked twice:
 * by its text (no `..` or absolute path out) and by where it really leads
 * (no symlink out), because either alone can be fooled.
 */
export class Workspace {
  /** The root as given, for absolute paths the model copies from it. */
  readonly root: string;
  readonly realRoot: string;

  /** Throws when `root` does not exist: a workspace is made for a folder that is there. */
  constructor(root: string) {
    this.root = path.resolve(root);
    this.realRoot = realpathSync(this.root);
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

  /** `real` (a path under the real root, as the file system reports it) as the model should see it. */
  show(real: string): string {
    return path.relative(this.realRoot, real) || '.';
  }
}
