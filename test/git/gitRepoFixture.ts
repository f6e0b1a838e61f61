import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

export interface TestRepo {
  /** Real path: git reports the top level with symlinks resolved. */
  path: string;
  git(...args: string[]): string;
  write(file: string, content: string | Buffer): void;
  read(file: string): string;
  remove(): void;
}

/** A temp folder, made a repository unless `init` is false; the test's own commits use a local identity. */
export function makeRepo(init = true): TestRepo {
  const path = realpathSync(mkdtempSync(join(tmpdir(), 'turnloom-git-')));
  const git = (...args: string[]) =>
    // Optional locks off: the test's own `git status` must not refresh (rewrite) the index it is watching.
    // (`git diff` against the work tree refreshes it regardless, so the fixture never runs that.)
    execFileSync('git', args, { cwd: path, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  if (init) {
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'test@example.com');
    git('config', 'user.name', 'Test');
    // A detached `gc --auto` after committing many files would still be writing into .git when the test removes it.
    git('config', 'gc.auto', '0');
  }
  return {
    path,
    git,
    write(file, content) {
      mkdirSync(dirname(join(path, file)), { recursive: true });
      writeFileSync(join(path, file), content);
    },
    read: (file) => readFileSync(join(path, file), 'utf8'),
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}

export function chmodX(repo: TestRepo, file: string): void {
  chmodSync(join(repo.path, file), 0o755);
}

/** sha256 and executable bit of every file outside .git, keyed by path: equal maps mean byte-identical trees. */
export function treeFingerprint(root: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!(dir === root && entry.name === '.git')) walk(full);
        continue;
      }
      const executable = (lstatSync(full).mode & 0o111) !== 0 ? 'x' : '-';
      files[relative(root, full)] = `${executable} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
    }
  };
  walk(root);
  return files;
}

/** Everything of the user's that a checkpoint must not change, the index file's bytes read before any git call. */
export function userState(repo: TestRepo): Record<string, unknown> {
  const indexFile = join(repo.path, '.git', 'index');
  const index = existsSync(indexFile) ? createHash('sha256').update(readFileSync(indexFile)).digest('hex') : null;
  const tryGit = (...args: string[]) => {
    try {
      return repo.git(...args);
    } catch {
      return '(fails)';
    }
  };
  return {
    index,
    cached: repo.git('diff', '--cached'),
    head: tryGit('rev-parse', '--verify', '--quiet', 'HEAD'),
    symbolicHead: repo.git('symbolic-ref', 'HEAD'),
    branches: repo.git('for-each-ref', 'refs/heads'),
    stash: repo.git('stash', 'list'),
    status: repo.git('status', '--porcelain=v1', '--untracked-files=all', '--ignored'),
    gitDir: readdirSync(join(repo.path, '.git')).sort(),
    tree: treeFingerprint(repo.path),
  };
}
