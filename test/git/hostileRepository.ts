import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestRepo } from './gitRepoFixture.ts';

/** A folder outside every repository where planted code leaves a file named after the way it got to run. */
export interface Markers {
  /** Room for planted files that must live outside the repository (a hooks folder), apart from the markers. */
  scratch: string;
  /** A shell command that leaves the marker `name`. */
  touch(name: string): string;
  /** The markers left so far, sorted: `[]` means nothing planted ran. */
  left(): string[];
  remove(): void;
}

export function makeMarkers(): Markers {
  const root = mkdtempSync(join(tmpdir(), 'turnloom-markers-'));
  const left = join(root, 'left');
  const scratch = join(root, 'scratch');
  mkdirSync(left);
  mkdirSync(scratch);
  return {
    scratch,
    // Unquoted, so the command fits any config syntax: temporary folders and marker names hold no spaces or quotes.
    touch: (name) => `touch ${join(left, name)}`,
    left: () => readdirSync(left).sort(),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** An executable hook script `name` in `folder` that runs `command`. */
export function writeHook(folder: string, name: string, command: string): void {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, name), `#!/bin/sh\n${command}\n`);
  chmodSync(join(folder, name), 0o755);
}

/** Hooks that a checkpoint's git (add, update-ref) or the user's own next checkout or commit would run. */
export const hookNames = ['post-index-change', 'reference-transaction', 'post-checkout', 'pre-commit'];

/**
 * Files whose `.gitattributes` line selects a filter driver of that name:
 * arbitrary names, one with `=` (which a `-c name=value` argument cannot
 * spell) and the empty one.
 */
export const filteredFiles: Record<string, string> = { 'plain.txt': 'x', 'equals.eq': 'a=b', 'included.inc': 'inc', 'process.proc': 'proc', 'unnamed.none': '' };

/**
 * What a model, or a command it ran, can leave in a repository so that the
 * next git run on it runs code: every way touches its own marker. The
 * repository's config defines an fsmonitor, filter drivers (clean, smudge,
 * a long-running process, one required), diff drivers, an external diff, a
 * pager and an editor, and includes two more files (one through
 * `includeIf`) that set a hooks folder and another filter; `.git/hooks`
 * holds executable hooks; `.gitattributes` sends every file through a
 * filter and a diff driver.
 */
export function plantHostileRepository(repo: TestRepo, markers: Markers): void {
  const gitDir = join(repo.path, '.git');
  const hooksElsewhere = join(markers.scratch, 'hooks');
  for (const hook of hookNames) {
    writeHook(join(gitDir, 'hooks'), hook, markers.touch(`hook-${hook}`));
    writeHook(hooksElsewhere, hook, markers.touch(`hooksPath-${hook}`));
  }
  const quoted = (command: string) => JSON.stringify(command);
  writeFileSync(
    join(gitDir, 'config'),
    [
      '',
      '[core]',
      `\tfsmonitor = ${quoted(`${markers.touch('fsmonitor')}; false`)}`,
      `\tpager = ${quoted(`${markers.touch('pager')}; cat`)}`,
      `\teditor = ${quoted(markers.touch('editor'))}`,
      '[diff]',
      `\texternal = ${quoted(markers.touch('diff-external'))}`,
      '[diff "x"]',
      `\ttextconv = ${quoted(`${markers.touch('textconv')}; cat`)}`,
      `\tcommand = ${quoted(markers.touch('diff-command'))}`,
      '[filter "x"]',
      `\tclean = ${quoted(`${markers.touch('filter-x-clean')}; cat`)}`,
      `\tsmudge = ${quoted(`${markers.touch('filter-x-smudge')}; cat`)}`,
      '[filter "a=b"]',
      `\tclean = ${quoted(`${markers.touch('filter-equals-clean')}; cat`)}`,
      `\tsmudge = ${quoted(`${markers.touch('filter-equals-smudge')}; cat`)}`,
      '\trequired = true',
      '[filter "proc"]',
      `\tprocess = ${quoted(markers.touch('filter-process'))}`,
      '[filter ""]',
      `\tclean = ${quoted(`${markers.touch('filter-unnamed-clean')}; cat`)}`,
      '[include]',
      '\tpath = hostile-include.cfg',
      '[includeIf "gitdir:/"]',
      '\tpath = hostile-include-if.cfg',
      '',
    ].join('\n'),
    { flag: 'a' },
  );
  writeFileSync(join(gitDir, 'hostile-include.cfg'), `[core]\n\thooksPath = ${hooksElsewhere}\n`);
  writeFileSync(join(gitDir, 'hostile-include-if.cfg'), `[filter "inc"]\n\tclean = ${quoted(`${markers.touch('filter-included-clean')}; cat`)}\n`);
  repo.write('.gitattributes', ['* diff=x', ...Object.entries(filteredFiles).map(([file, driver]) => `${file} filter=${driver}`), ''].join('\n'));
}
