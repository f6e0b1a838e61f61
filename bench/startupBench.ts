import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type NatsConnection, connect } from '@nats-io/transport-node';
import { tempDir } from '../test/support/tempDir.ts';
import { Teardown, privateNats } from './busBench.ts';
import { type Figure, type Suite, compared, interleaved, median } from './figure.ts';
import { spawnToExit, timeBareFetch, timeRun } from './cliRunScenario.ts';

const bin = fileURLToPath(new URL('../bin/turnloom.mjs', import.meta.url));
/** The NATS client as the package installs it, imported by absolute URL: the baseline child runs from a temp folder. */
const natsClientUrl = pathToFileURL(createRequire(import.meta.url).resolve('@nats-io/transport-node')).href;

/** A child that has not answered after this long is broken, not slow. */
const START_TIMEOUT_MS = 60_000;

/**
 * The comparison: the least a Node program on NATS does before it can
 * answer, the same client library connecting to the same server and
 * answering one subject, polled exactly as `health` is.
 */
const baselineScript = `import { connect } from ${JSON.stringify(natsClientUrl)};
const nc = await connect({ servers: process.argv[2] });
nc.subscribe(process.argv[3], { callback: (_error, msg) => void msg.respond(msg.data) });
await nc.flush();
`;

/**
 * The environment a user without provider keys has: ours minus anything
 * that would pick a provider, configure the child's NATS login, or load
 * code into it (`NODE_OPTIONS`: the parent may run under a test runner).
 */
function plainEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(OPENAI_|ANTHROPIC_|TURNLOOM_)/.test(name) || name === 'NODE_OPTIONS') delete env[name];
  }
  return env;
}

/** Spawns `node <args>` from `cwd` and times it to its exit, in ms. */
async function timeToExit(args: string[], cwd: string): Promise<number> {
  const { started, exited } = spawnToExit(args, { cwd, env: plainEnvironment(), timeoutMs: START_TIMEOUT_MS });
  return (await exited) - started;
}

/**
 * The CLI as a person meets it, in interleaved rounds: `node -e 0`,
 * `turnloom --version`, `--help`, a four-step `run` against a local fake
 * model (see cliRunScenario.ts), and a bare fetch of the same answer.
 */
async function cliFigures(rounds: number, folder: string, smoke: boolean): Promise<Figure[]> {
  const samples = { bare: [] as number[], version: [] as number[], help: [] as number[], firstRequest: [] as number[], answerToExit: [] as number[], fetchToExit: [] as number[] };
  const round = async (index: number) => {
    const place = join(folder, `run-${index}`);
    mkdirSync(place);
    samples.bare.push(await timeToExit(['-e', '0'], place));
    samples.version.push(await timeToExit([bin, '--version'], place));
    samples.help.push(await timeToExit([bin, '--help'], place));
    const run = await timeRun(bin, place, plainEnvironment(), START_TIMEOUT_MS);
    samples.firstRequest.push(run.firstRequest);
    samples.answerToExit.push(run.answerToExit);
    samples.fetchToExit.push(await timeBareFetch(place, plainEnvironment(), START_TIMEOUT_MS));
  };
  // One unmeasured round first: what a user's second start finds (the OS's file cache) is what is timed.
  if (!smoke) await round(0);
  for (let index = 1; index <= rounds; index += 1) await round(index);
  const seconds = (values: number[]) => median(values) / 1000;
  const bare = { label: '`node -e 0`', value: seconds(samples.bare) };
  const note = `${rounds} rounds, medians, interleaved with \`node -e 0\`; ${smoke ? 'first starts (smoke)' : 'after one unmeasured round'}`;
  return [
    compared({ key: 'versionStart', title: '`turnloom --version`, spawn to exit', unit: 's', value: seconds(samples.version), comparison: bare, target: { on: 'value', op: '<=', bound: 0.15 }, note }, smoke),
    compared({ key: 'helpStart', title: '`turnloom --help`, spawn to exit', unit: 's', value: seconds(samples.help), comparison: bare, target: { on: 'value', op: '<=', bound: 0.15 }, note }, smoke),
    compared(
      {
        key: 'runFirstRequest',
        title: '`turnloom run` (embedded, git workspace), spawn to its first model request reaching a local fake model',
        unit: 's',
        value: seconds(samples.firstRequest),
        comparison: bare,
        target: { on: 'value', op: '<=', bound: 0.25 },
        note,
      },
      smoke,
    ),
    compared(
      {
        key: 'runAnswerToExit',
        title: '`turnloom run`, last byte of the final answer to exit (checkpoint, diff, side work, summary printed)',
        unit: 's',
        value: seconds(samples.answerToExit),
        comparison: { label: 'bare node: fetch the same answer, read it whole, exit', value: seconds(samples.fetchToExit) },
        target: { on: 'value', op: '<=', bound: 0.1 },
        note: `${rounds} rounds, medians; a four-step task (read, edit, bash, answer) with --approve auto --mode full; the fake model answers side work at once`,
      },
      smoke,
    ),
  ];
}

/** Asks `subject` until something answers; stops with the reason `gone()` gives once the child is gone, or at the timeout. */
async function firstAnswer(nc: NatsConnection, subject: string, gone: () => Error | null): Promise<void> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  for (;;) {
    const failure = gone();
    if (failure) throw failure;
    if (performance.now() > deadline) throw new Error(`nothing answered on ${subject} within ${START_TIMEOUT_MS} ms`);
    try {
      await nc.request(subject, '{}', { timeout: 250 });
      return;
    } catch {
      // Nobody listening yet (the server says so at once) or too slow: ask again after a pause short
      // enough not to matter and long enough not to crowd the child.
      await sleep(5);
    }
  }
}

/** Stops a child (SIGTERM, then SIGKILL if it lingers) and waits until it is gone. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(killer);
}

/**
 * Spawns `args` and times it until `subject` answers over NATS, in ms. The
 * child is stopped before this returns, whatever happened; what it printed
 * is in the error when it exits early. `upLine`: what the child prints once
 * it handles SIGTERM (serve answers `health` a moment before), waited for,
 * untimed, so that it is stopped the way a user stops it.
 */
async function timeToAnswer(nc: NatsConnection, subject: string, args: string[], cwd: string, upLine?: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd, env: plainEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  let gone: Error | null = null;
  child.once('error', (error) => void (gone = error));
  child.once('exit', (code, signal) => void (gone = new Error(`${args.join(' ')} exited (${code ?? signal}) before answering:\n${output}`)));
  try {
    await firstAnswer(nc, subject, () => gone);
    const elapsed = performance.now() - started;
    const upBy = performance.now() + 10_000;
    while (upLine && !output.includes(upLine) && !gone && performance.now() < upBy) await sleep(5);
    return elapsed;
  } finally {
    await stopChild(child);
  }
}

export const startupSuite: Suite = {
  name: 'startup',
  async run({ smoke }): Promise<Figure[]> {
    const rounds = smoke ? 1 : 5;
    const teardown = new Teardown();
    try {
      const nats = await privateNats(teardown);
      const nc = teardown.keep('poller', await connect({ servers: nats.url }), (connection) => connection.close());
      // The agent's workspace is the folder serve starts in: an empty one, as a fresh project would be.
      const workspace = teardown.keep('workspace', tempDir('turnloom-startbench-'), (folder) => folder.remove());
      const script = join(workspace.path, 'baseline.mjs');
      writeFileSync(script, baselineScript);
      let started = 0;

      const serve = () => {
        // A fresh data folder and prefix each time: a first start, never one waiting on a previous engine's claim.
        const prefix = `start${++started}`;
        const data = join(workspace.path, `data-${started}`);
        return timeToAnswer(nc, `${prefix}.v1.api.health`, [bin, 'serve', '--nats', nats.url, '--data', data, '--prefix', prefix], workspace.path, 'serving on');
      };
      const bare = () => timeToAnswer(nc, `bench.start.${++started}`, [script, nats.url, `bench.start.${started}`], workspace.path);

      // Unmeasured first starts fill the caches a user's second start finds warm (tsx's compile cache when it runs the sources, the OS's file cache).
      if (!smoke) {
        await bare();
        await serve();
      }
      const measured = await interleaved(rounds, bare, serve);
      const cli = await cliFigures(rounds, workspace.path, smoke);
      return [
        compared(
          {
            key: 'serveStart',
            title: '`turnloom serve` start → first health answer over NATS',
            unit: 'ms',
            value: measured.subject,
            comparison: { label: 'bare node + @nats-io/transport-node connect → first answer', value: measured.baseline },
            target: { on: 'ratio', op: '<=', bound: 2 },
            note: `${measured.rounds} rounds, spawn to the first answer polled every ~5 ms from the parent, medians; no provider key, empty workspace (no git); ${smoke ? 'first starts (smoke)' : 'after one unmeasured start of each (warm caches)'}`,
          },
          smoke,
        ),
        ...cli,
      ];
    } finally {
      await teardown.run();
    }
  },
};
