import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ToolExecutor } from '../../domain/index.ts';
import { openWorkspace } from '../../services/worker/openWorkspace.ts';
import { gitRepo } from '../cli/runFixtures.ts';
import { TempFolders, toolCall, writeTree } from './toolFixture.ts';

const search = async (tools: ToolExecutor, name: 'glob' | 'grep', input: Record<string, unknown>): Promise<string[]> => {
  const { output, isError } = await tools.execute(toolCall(name, input), new AbortController().signal);
  expect(isError, output).toBe(false);
  return output === 'no matches' || output.startsWith('no files match') ? [] : output.split('\n');
};

/** A project as they come: build output and logs ignored, a nested .gitignore, an .ignore, the repository's own exclude file, a negation. */
const project = {
  '.gitignore': 'build/\n*.min.js\n*.log\n!keep.log\nsrc/gen/\n',
  'build/out.js': 'needle\n',
  'src/app.js': 'needle\n',
  'src/app.min.js': 'needle\n',
  'src/gen/made.js': 'needle\n',
  'src/deep/view.js': 'needle\n',
  'sub/.gitignore': 'cache/\n',
  'sub/cache/c.js': 'needle\n',
  'sub/s.js': 'needle\n',
  'sub/draft.js': 'needle\n',
  'sub/.ignore': 'draft.js\n',
  'excluded.js': 'needle\n',
  'keep.log': 'needle\n',
  'other.log': 'needle\n',
};

describe("glob and grep honour .gitignore, .ignore and .git/info/exclude as ripgrep does (the worker's tools, real rg)", () => {
  const folders: Array<{ remove(): void }> = [];
  const temp = new TempFolders();
  let root: string;
  let tools: ToolExecutor;
  beforeEach(async () => {
    const repo = gitRepo();
    folders.push(repo);
    root = repo.path;
    writeTree(root, project);
    appendFileSync(path.join(root, '.git', 'info', 'exclude'), 'excluded.js\n');
    tools = (await openWorkspace(root)).tools;
  });
  afterEach(() => {
    for (const folder of folders.splice(0)) folder.remove();
    temp.removeAll();
  });

  const kept = ['keep.log', 'src/app.js', 'src/deep/view.js', 'sub/s.js'];

  it('leaves out what they ignore, whatever the glob names', async () => {
    expect(await search(tools, 'glob', { pattern: '**/*.js' })).toEqual(['src/app.js', 'src/deep/view.js', 'sub/s.js']);
    expect(await search(tools, 'glob', { pattern: '**/*' })).toEqual(['.gitignore', 'keep.log', 'src/app.js', 'src/deep/view.js', 'sub/.gitignore', 'sub/.ignore', 'sub/s.js']);
    // A glob naming an ignored file outright does not bring it back (ripgrep's own --glob would).
    expect(await search(tools, 'glob', { pattern: 'src/app.min.js' })).toEqual([]);
    expect(await search(tools, 'glob', { pattern: '*.{js,log}' })).toEqual(['keep.log']);
    expect(await search(tools, 'grep', { pattern: 'needle' })).toEqual(kept.map((file) => `${file}:1:needle`));
    const byGlob: Array<[string, string[]]> = [
      ['*.js', ['src/app.js', 'src/deep/view.js', 'sub/s.js']],
      ['src/**/*.js', ['src/app.js', 'src/deep/view.js']],
      ['sub/*', ['sub/s.js']],
      ['*.min.js', []],
      ['excluded.js', []],
      ['draft.js', []],
    ];
    for (const [glob, files] of byGlob) expect(await search(tools, 'grep', { pattern: 'needle', glob }), glob).toEqual(files.map((file) => `${file}:1:needle`));
    expect(await search(tools, 'grep', { pattern: 'needle', glob: '!*.log' })).toEqual(kept.filter((file) => !file.endsWith('.log')).map((file) => `${file}:1:needle`));
  });

  it("searching a folder below the root still honours the root's .gitignore", async () => {
    expect(await search(tools, 'glob', { pattern: '**', path: 'src' })).toEqual(['src/app.js', 'src/deep/view.js']);
    expect(await search(tools, 'grep', { pattern: 'needle', path: 'src' })).toEqual(['src/app.js:1:needle', 'src/deep/view.js:1:needle']);
    expect(await search(tools, 'grep', { pattern: 'needle', path: 'src', glob: '*.js' })).toEqual(['src/app.js:1:needle', 'src/deep/view.js:1:needle']);
  });

  it('searches an ignored file or folder named outright, as ripgrep does', async () => {
    expect(await search(tools, 'grep', { pattern: 'needle', path: 'build/out.js' })).toEqual(['build/out.js:1:needle']);
    expect(await search(tools, 'grep', { pattern: 'needle', path: 'build' })).toEqual(['build/out.js:1:needle']);
    expect(await search(tools, 'glob', { pattern: '*', path: 'src/gen' })).toEqual(['src/gen/made.js']);
  });

  it('outside a git repository, .ignore still counts and .gitignore does not (ripgrep needs the repository for it)', async () => {
    const plain = temp.make('turnloom-plain-');
    writeTree(plain, { '.gitignore': 'build/\n', '.ignore': 'tmp/\n', 'build/out.js': 'needle\n', 'tmp/t.js': 'needle\n', 'a.js': 'needle\n' });
    const plainTools = (await openWorkspace(plain)).tools;
    expect(await search(plainTools, 'glob', { pattern: '**/*.js' })).toEqual(['a.js', 'build/out.js']);
    expect(await search(plainTools, 'grep', { pattern: 'needle' })).toEqual(['a.js:1:needle', 'build/out.js:1:needle']);
  });

  it("a workspace inside a repository honours the repository's .gitignore files above it", async () => {
    mkdirSync(path.join(root, 'packages', 'web'), { recursive: true });
    appendFileSync(path.join(root, '.gitignore'), 'dist/\n');
    writeTree(root, { 'packages/web/dist/bundle.js': 'needle\n', 'packages/web/index.js': 'needle\n' });
    const inner = (await openWorkspace(path.join(root, 'packages', 'web'))).tools;
    expect(await search(inner, 'glob', { pattern: '**/*.js' })).toEqual(['index.js']);
    expect(await search(inner, 'grep', { pattern: 'needle' })).toEqual(['index.js:1:needle']);
  });
});

describe('a hostile repository’s ignore files: linked out of the workspace or to a device', () => {
  const temp = new TempFolders();
  afterEach(() => temp.removeAll());

  const call = async (tools: ToolExecutor, name: string, input: Record<string, unknown>) => tools.execute(toolCall(name, input), new AbortController().signal);

  it('never quotes an ignore file linked to a file outside (ripgrep complains about its lines, quoting them)', async () => {
    const outside = temp.make('turnloom-outside-');
    writeFileSync(path.join(outside, 'secret.txt'), "TOPSECRET-1{abc\nx': LEAKED-2 {\n");
    const repo = gitRepo();
    try {
      writeTree(repo.path, { 'a.txt': 'hello\n' });
      symlinkSync(path.join(outside, 'secret.txt'), path.join(repo.path, '.gitignore'));
      const tools = (await openWorkspace(repo.path)).tools;
      const results = [
        await call(tools, 'glob', { pattern: '**/*.nothing' }),
        await call(tools, 'grep', { pattern: 'no such text' }),
        await call(tools, 'grep', { pattern: 'no such text', glob: '*.txt' }),
        await call(tools, 'grep', { pattern: 'needle(' }),
      ];
      expect(results).toEqual([
        { output: 'no files match **/*.nothing', isError: false },
        { output: 'no matches', isError: false },
        { output: 'no matches', isError: false },
        { output: 'invalid regex: unclosed group', isError: true },
      ]);
      expect(JSON.stringify(results)).not.toMatch(/TOPSECRET|LEAKED/);
    } finally {
      repo.remove();
    }
  });

  it('a .gitignore linked to /dev/zero (a line without end) ends the search with an error saying so, not the machine’s memory', async () => {
    const repo = gitRepo();
    try {
      writeTree(repo.path, { 'a.txt': 'hello\n' });
      symlinkSync('/dev/zero', path.join(repo.path, '.gitignore'));
      const tools = (await openWorkspace(repo.path)).tools;
      for (const [name, input] of [
        ['glob', { pattern: '**/*' }],
        ['grep', { pattern: 'hello' }],
      ] as const) {
        const { output, isError } = await call(tools, name, input);
        expect(isError, output).toBe(true);
        expect(output).toMatch(/^ripgrep ran out of memory \(1 GiB\): a file or an ignore file it read has a line without end/);
      }
    } finally {
      repo.remove();
    }
  });
});

/** The processes whose parent is `parent`, named `rg`. */
function ripgrepsOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const match = /\((.*)\) \S+ (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'));
        return match?.[1] === 'rg' && Number(match[2]) === parent;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('the ripgrep a search runs dies with the process that ran it', () => {
  it('kill -9 of a worker whose grep waits on an ignore file that is a FIFO leaves no rg behind', { timeout: 60_000 }, async () => {
    const repo = gitRepo();
    try {
      writeTree(repo.path, { 'a.txt': 'hello\n' });
      execFileSync('mkfifo', [path.join(repo.path, '.gitignore')]);
      const script = path.join(import.meta.dirname, 'runToolsScript.ts');
      const worker = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify({ root: repo.path, calls: [{ name: 'grep', input: { pattern: 'hello' } }] })], { stdio: 'ignore' });
      let found: number[] = [];
      while ((found = ripgrepsOf(worker.pid!)).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGKILL');
      await exited;
      while (found.some((pid) => existsSync(`/proc/${pid}/stat`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')))) await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      repo.remove();
    }
  });
});

describe('glob and grep in a turn: turnloom run on a repository whose build output is ignored', () => {
  it('the model is shown neither build/out.js nor other ignored files', async () => {
    const repo = gitRepo();
    try {
      writeTree(repo.path, { '.gitignore': 'build/\n', 'build/out.js': 'needle\n', 'src/app.js': 'needle\n' });
      const script = path.join(repo.path, '..', `${path.basename(repo.path)}-script.json`);
      writeTree(path.dirname(script), {
        [path.basename(script)]: JSON.stringify({
          steps: [[{ toolCall: { name: 'glob', input: { pattern: '**/*.js' } } }, { toolCall: { name: 'grep', input: { pattern: 'needle' } } }], [{ text: 'done' }]],
        }),
      });
      const data = path.join(repo.path, '..', `${path.basename(repo.path)}-data`);
      const bin = path.join(import.meta.dirname, '..', '..', 'bin', 'turnloom.mjs');
      const stdout = execFileSync(process.execPath, [bin, 'run', 'find the needles', '--script', script, '--data', data, '--json'], {
        cwd: repo.path,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TURNLOOM_') && !key.endsWith('_API_KEY'))) },
        timeout: 60_000,
      });
      // The summary is the last line (alone, or after the events of a JSON Lines stream).
      const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as { status: string; toolCalls: Array<{ name: string; output: string }> };
      expect(summary.status).toBe('completed');
      expect(summary.toolCalls.map(({ name, output }) => [name, output])).toEqual([
        ['glob', 'src/app.js'],
        ['grep', 'src/app.js:1:needle'],
      ]);
      execFileSync('rm', ['-rf', script, data]);
    } finally {
      repo.remove();
    }
  });
});
