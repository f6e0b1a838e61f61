import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliProcess, runNode } from '../support/cliProcess.ts';
import { expectedFrom, fixturesDir } from '../support/fixtureOracle.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';

const exec = promisify(execFile);

/** The bytes of every file under `folder` (as `du -b` counts them, links not followed). */
async function folderBytes(folder: string): Promise<number> {
  const { stdout } = await exec('du', ['-sb', folder]);
  return Number(stdout.split('\t')[0]);
}
const repo = fileURLToPath(new URL('../../', import.meta.url));
const examples = join(repo, 'examples');
const lineCount = (file: string) => readFileSync(join(examples, file), 'utf8').trimEnd().split('\n').length;

/** What a program gets from the package's types: checked by tsc in the installed project, never run. */
const consumerTypes = `import { z } from 'zod';
import { type TurnEvent, type ToolCallContext, tool } from 'turnloom';

// execute's input is the parsed output of the schema: a default makes the field present.
export const lookup = tool({
  name: 'lookup',
  description: 'Looks a word up.',
  parameters: z.object({ word: z.string(), limit: z.number().int().default(3), tags: z.array(z.enum(['noun', 'verb'])).optional() }),
  kind: (input) => (input.limit > 10 ? 'command' : 'read'),
  execute: (input, context: ToolCallContext) => {
    const word: string = input.word;
    const limit: number = input.limit;
    const tags: Array<'noun' | 'verb'> | undefined = input.tags;
    // @ts-expect-error the schema has no \`page\`
    void input.page;
    // @ts-expect-error \`word\` is a string
    const wrong: number = input.word;
    return { word, limit, tags, wrong, aborted: context.signal.aborted, where: [context.threadId, context.turnId, context.callId, context.workspace] };
  },
});

// An execute written for another input does not fit the schema's.
// @ts-expect-error \`n\` is a string in the schema, not a number
tool({ name: 'bad', description: 'x', parameters: z.object({ n: z.string() }), execute: (input: { n: number }) => input.n + 1 });

// @ts-expect-error parameters must be a Zod object
tool({ name: 'bad', description: 'x', parameters: z.string(), execute: () => '' });

/** Every kind handled: the \`never\` check compiles. */
export function describeEvent(event: TurnEvent): string {
  switch (event.type) {
    case 'turn.started':
      return 'started';
    case 'step.started':
    case 'step.finished':
      return \`step \${event.step}\`;
    case 'text.delta':
    case 'reasoning.delta':
      return event.text;
    case 'tool.started':
      return event.name;
    case 'tool.output':
      return event.output;
    case 'tool.finished':
      return \`\${event.name}: \${event.state} \${event.result ?? event.error}\`;
    case 'approval.asked':
      return event.approval.subject;
    case 'approval.answered':
      return event.decision;
    case 'subagent.started':
      return event.agent;
    case 'subagent.settled':
      return event.status;
    case 'usage':
      return String(event.usage.output);
    case 'activity':
      return event.message;
    case 'turn.settled':
      return event.turn.state;
    default: {
      const missed: never = event;
      return missed;
    }
  }
}

/** One kind forgotten: the \`never\` check does not compile. */
export function forgetsOne(event: TurnEvent): string {
  switch (event.type) {
    case 'turn.started':
    case 'step.started':
    case 'step.finished':
    case 'text.delta':
    case 'reasoning.delta':
    case 'tool.started':
    case 'tool.output':
    case 'tool.finished':
    case 'approval.asked':
    case 'approval.answered':
    case 'subagent.started':
    case 'subagent.settled':
    case 'usage':
    case 'activity':
      return event.type;
    default: {
      // @ts-expect-error 'turn.settled' is not handled
      const missed: never = event;
      return missed;
    }
  }
}
`;

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
  let installedBytes = 0;
  const tsc = (compiler: string, ...args: string[]) =>
    exec(process.execPath, [join(project, 'node_modules', compiler, 'bin/tsc'), '-p', '.', ...args], { cwd: project }).then(
      ({ stdout }) => stdout,
      (error: { stdout: string }) => error.stdout,
    );

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
    const install = (...packages: string[]) => exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packages], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
    // What an embedder installs (the size is measured with nothing else), then the compilers the type checks use:
    // the supported one, the oldest with library checks on, the oldest with them off.
    await install(tarball, 'zod@^4');
    installedBytes = await folderBytes(join(project, 'node_modules'));
    await install('typescript@~5.9.3', 'typescript-5.7@npm:typescript@~5.7.3', 'typescript-5.5@npm:typescript@~5.5.4', '@types/node@^20');
    for (const file of readdirSync(examples)) copyFileSync(join(examples, file), join(project, file));
    writeFileSync(join(project, 'consumerTypes.ts'), consumerTypes);
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

  it('installs without the provider SDKs or the OpenTelemetry SDK: they are optional peer dependencies', () => {
    console.log(`installed with zod: ${(installedBytes / 1e6).toFixed(1)} MB`);
    for (const name of ['openai', '@anthropic-ai/sdk', '@opentelemetry/sdk-trace-base', '@opentelemetry/sdk-metrics', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-metrics-otlp-http', '@opentelemetry/resources']) {
      expect(existsSync(join(project, 'node_modules', name)), name).toBe(false);
    }
    expect(existsSync(join(project, 'node_modules/@opentelemetry/api'))).toBe(true);
  });

  it('the examples and the type tests type-check against the installed package (nodenext, strict, library checks on), without the SDKs', async () => {
    // The type tests: execute's input inferred from the schema (wrong uses are expected errors), a switch on turn.events() exhaustive.
    expect(await tsc('typescript')).toBe('');
    expect(readdirSync(join(project, 'out')).sort()).toEqual(['abortTurn.js', 'consumerTypes.js', 'customTool.js', 'followAndApprove.js', 'inProcess.js', 'workerWithHook.js']);
    // An @ts-expect-error that meets no error is itself one (TS2578): each wrong use above must fail to compile.
  }, 120_000);

  it('the oldest TypeScript it supports: 5.7 with library checks on, 5.5 with skipLibCheck (docs/embedding.md)', async () => {
    expect(await Promise.all([tsc('typescript-5.7', '--noEmit'), tsc('typescript-5.5', '--noEmit', '--skipLibCheck')])).toEqual(['', '']);
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

  it('a tool of the program’s own, typed by zod, in at most 12 lines: the model’s call reaches it, and the answer uses its result', async () => {
    console.log(`example lines: ${readdirSync(examples).filter((file) => file.endsWith('.ts')).map((file) => `${file} ${lineCount(file)}`).join(', ')}`);
    expect(lineCount('customTool.ts')).toBeLessThanOrEqual(12);
    const { stdout } = await exec(process.execPath, [join(project, 'out/customTool.js')], { cwd: project, timeout: 60_000 });
    expect(stdout).toBe('[weather {"city":"Oslo"}: {"city":"Oslo","celsius":21,"sky":"clear"}]\nThe weather tool says: {"city":"Oslo","celsius":21,"sky":"clear"}\ncompleted\n');
  }, 90_000);

  it('aborting startTurn’s signal half a second into a slow stream settles the turn interrupted', async () => {
    const { stdout } = await exec(process.execPath, [join(project, 'out/abortTurn.js')], { cwd: project, timeout: 60_000 });
    const [, ms] = /^interrupted \(the user moved on\) (\d+) ms after the abort\n$/.exec(stdout) ?? [];
    expect(ms, stdout).toBeDefined();
    console.log(`aborted → settled interrupted in ${ms} ms (installed package)`);
  }, 90_000);

  it('without the SDKs: the command runs on the scripted provider; a key set, or telemetry asked for, is one line naming what to install; so is a provider made in code', async () => {
    const bin = join(project, 'node_modules/turnloom/bin/turnloom.mjs');
    const workspace = join(dir.path, 'run-workspace');
    mkdirSync(workspace);
    const env = { ...process.env, OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', XDG_DATA_HOME: join(dir.path, 'xdg') };
    const run = (args: string[], extra: Record<string, string> = {}) =>
      exec(process.execPath, [bin, ...args], { cwd: workspace, env: { ...env, ...extra }, timeout: 60_000 }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
      );
    const scripted = await run(['run', 'What is here?', '--data', join(dir.path, 'run-data')]);
    expect(scripted.code).toBe(0);
    expect(scripted.stdout).toContain('scripted provider');
    const keyed = await run(['run', 'hello', '--data', join(dir.path, 'run-data')], { OPENAI_API_KEY: 'sk-test' });
    expect(keyed).toMatchObject({ code: 2, stdout: '' });
    expect(keyed.stderr).toBe('turnloom: OPENAI_API_KEY is set for provider "openai-chat", but the "openai" package it runs on is not installed: npm install openai (with npx: npx -p turnloom -p openai turnloom …), or unset OPENAI_API_KEY to use the scripted provider\n');
    const traced = await run(['serve', '--data', join(dir.path, 'serve-data')], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(traced.code).toBe(1);
    expect(traced.stderr).toMatch(/^turnloom: OpenTelemetry export \(asked for by the OTEL_\* variables; OTEL_SDK_DISABLED=true turns it off\) needs the packages .+: npm install @opentelemetry\/sdk-trace-base @opentelemetry\/exporter-trace-otlp-http @opentelemetry\/resources @opentelemetry\/sdk-metrics @opentelemetry\/exporter-metrics-otlp-http\n$/);
    const program = join(project, 'programs/anthropic.mjs');
    mkdirSync(dirname(program), { recursive: true });
    writeFileSync(program, `import { AnthropicProvider } from 'turnloom/providers';\ntry { new AnthropicProvider({ defaultModel: 'x' }); } catch (error) { console.log(error.code, error.message); }\n`);
    const { stdout } = await exec(process.execPath, [program], { cwd: project });
    expect(stdout).toBe('unavailable AnthropicProvider needs the package "@anthropic-ai/sdk", not installed here: npm install @anthropic-ai/sdk\n');
  }, 120_000);

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
      // The worker's workspace is the project: the scripted model lists its top level.
      expect(client.output()).toContain('customTool.ts');
      expect(client.output()).toMatch(/\ncompleted\n$/);
    } finally {
      await Promise.all(processes.map((process) => process.kill('SIGTERM')));
    }
  }, 120_000);

  it('with `openai` installed beside it, the OpenAI provider loads it and streams through the real SDK', async () => {
    await exec('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', 'openai@^6'], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
    const recorded = `${fixturesDir}openai-chat/openai-text.chunks.txt`;
    const program = join(project, 'programs/openai.mjs');
    mkdirSync(dirname(program), { recursive: true });
    writeFileSync(
      program,
      `import { readFileSync } from 'node:fs';
import { openRuntime } from 'turnloom';
import { OpenAiChatProvider } from 'turnloom/providers';
import { parseChunks, serveRecordedStream } from 'turnloom/testing';
const http = await serveRecordedStream('openai-chat', () => ({ kind: 'stream', chunks: parseChunks(readFileSync(process.argv[2], 'utf8')) }));
const runtime = await openRuntime({ providers: { openai: new OpenAiChatProvider({ baseURL: http.baseURL, apiKey: 'sk-test', defaultModel: 'gpt-test' }) } });
const settled = await (await runtime.client.startTurn({ text: 'hello' })).done;
console.log(JSON.stringify({ state: settled.state, text: settled.text, requests: http.requests.length }));
await runtime.close();
await http.close();
`,
    );
    const { stdout } = await exec(process.execPath, [program, recorded], { cwd: project, timeout: 60_000 });
    const outcome = JSON.parse(stdout) as { state: string; text: string; requests: number };
    expect(outcome).toMatchObject({ state: 'completed', text: expectedFrom('openai-chat', recorded).text });
    expect(outcome.requests).toBeGreaterThanOrEqual(1);
  }, 180_000);
});
