import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliProcess, runNode } from '../support/cliProcess.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';

const exec = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const examples = join(repo, 'examples');

/**
 * turnloom as a user gets it: `npm pack`, the tarball installed into an
 * empty project with a clean `npm install` from the registry, the examples
 * type-checked there under `moduleResolution: nodenext` against the
 * installed types, and run.
 */
describe('the package, packed and installed', () => {
  const dir = tempDir('turnloom-pack-');
  const project = join(dir.path, 'project');
  let tarball = '';
  let files: string[] = [];
  let nats: NatsServerHandle;

  beforeAll(async () => {
    // Packed from a copy of the tracked files, so prepack's build (it empties dist/ first, as for a publish) never pulls dist/ from under the other tests.
    const source = join(dir.path, 'source');
    const { stdout: tracked } = await exec('git', ['ls-files', '-z'], { cwd: repo, maxBuffer: 64 * 1024 * 1024 });
    for (const file of tracked.split('\0').filter(Boolean)) {
      mkdirSync(dirname(join(source, file)), { recursive: true });
      copyFileSync(join(repo, file), join(source, file));
    }
    symlinkSync(join(repo, 'node_modules'), join(source, 'node_modules'));
    const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', dir.path], { cwd: source, maxBuffer: 64 * 1024 * 1024 });
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string; size: number; files: Array<{ path: string }> }>;
    tarball = join(dir.path, packed!.filename);
    files = packed!.files.map((file) => file.path);
    console.log(`packed: ${packed!.filename}, ${packed!.size} bytes, ${files.length} files`);
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-turnloom', private: true, type: 'module' }));
    await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, 'typescript@~5.9.3', '@types/node@^20'], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
    for (const file of readdirSync(examples)) copyFileSync(join(examples, file), join(project, file));
    nats = await startNatsServer({ jetstream: false });
  }, 300_000);
  afterAll(async () => {
    await nats?.dispose();
    dir.remove();
  });

  it('ships dist/, the inspector page, bin/ and docs, and no test, fixture, bench or CI file', () => {
    expect(files).toContain('dist/lib/index.js');
    expect(files).toContain('dist/lib/index.d.ts');
    expect(files).toContain('dist/inspector/page/index.html');
    expect(files).toContain('bin/turnloom.mjs');
    expect(files).toContain('docs/embedding.md');
    expect(files.filter((path) => /^(test|bench|examples|\.ci|scratch)\/|\.test\.|fixtures|\.ts$/.test(path) && !path.endsWith('.d.ts'))).toEqual([]);
  });

  it('the examples type-check against the installed package (nodenext, library checks on)', async () => {
    const { stdout } = await exec(join(project, 'node_modules/.bin/tsc'), ['-p', '.'], { cwd: project }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(stdout).toBe('');
    expect(readdirSync(join(project, 'out')).sort()).toEqual(['followAndApprove.js', 'inProcess.js', 'workerWithHook.js']);
  }, 120_000);

  it('one turn in-process, in at most 25 lines', async () => {
    expect(readFileSync(join(examples, 'inProcess.ts'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(25);
    const workspace = join(dir.path, 'workspace');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'hello.txt'), 'hi\n');
    const { stdout } = await exec(process.execPath, [join(project, 'out/inProcess.js'), 'What is in this folder?'], { cwd: workspace, env: { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' }, timeout: 60_000 });
    expect(stdout).toContain('hello.txt');
    expect(stdout).toMatch(/\ncompleted \(\d+ in \/ \d+ out tokens\)\n$/);
  }, 90_000);

  it('a worker with a request hook and a client that follows a turn, against the installed `turnloom serve`', async () => {
    const processes: CliProcess[] = [];
    const env = { NATS_URL: nats.url, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '' };
    try {
      // The installed command, which runs dist/: `node_modules/.bin/turnloom` is a link to the package's bin.
      const serve = runNode(join(project, 'node_modules/turnloom/bin/turnloom.mjs'), ['serve', '--nats', nats.url, '--no-worker', '--data', join(dir.path, 'data')], { cwd: project, env });
      processes.push(serve);
      await serve.waitFor('data:', 60_000);
      const worker = runNode(join(project, 'out/workerWithHook.js'), [project], { cwd: project, env });
      processes.push(worker);
      await worker.waitFor('Ctrl-C', 60_000);
      const client = runNode(join(project, 'out/followAndApprove.js'), ['What is in this project?'], { cwd: project, env });
      processes.push(client);
      expect(await client.exited).toBe(0);
      expect(client.output()).toMatch(/thread thr_\w+, turn turn_\w+/);
      expect(client.output()).toContain('package.json');
      expect(client.output()).toMatch(/\ncompleted\n$/);
    } finally {
      await Promise.all(processes.map((process) => process.kill('SIGTERM')));
    }
  }, 120_000);
});
