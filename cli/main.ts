import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { UsageError, oneLine, parseOptions, userFacingMessage } from './cliErrors.ts';
import { installRedactingConsole, redact } from './redact.ts';
import { VERSION } from '../domain/version.ts';
import { configUsage, demoUsage, inspectUsage, mcpUsage, replayUsage, runUsage, serveUsage, showUsage, threadsUsage, undoUsage, workerUsage } from './commandUsage.ts';

/** The package root (the compiled command runs from dist/): charts belong to the package, wherever the command runs from. */
const above = resolve(fileURLToPath(new URL('..', import.meta.url)));
const packageRoot = basename(above) === 'dist' ? dirname(above) : above;

// Each command is loaded only when it runs (replay brings both provider SDKs, which take a second to import); help needs none of them.
const commands = {
  run: () => import('./runCommand.ts').then((module) => module.runCommand),
  threads: () => import('./threadsCommand.ts').then((module) => module.threadsCommand),
  show: () => import('./showCommand.ts').then((module) => module.showCommand),
  undo: () => import('./undoCommand.ts').then((module) => module.undoCommand),
  demo: () => import('./demoCommand.ts').then((module) => module.demoCommand),
  serve: () => import('./serveCommand.ts').then((module) => module.serveCommand),
  worker: () => import('./workerCommand.ts').then((module) => module.workerCommand),
  replay: () => import('./replayCommand.ts').then((module) => module.replayCommand),
  inspect: () => import('./inspectCommand.ts').then((module) => module.inspectCommand),
  mcp: () => import('./mcpCommand.ts').then((module) => module.mcpCommand),
  config: () => import('./configCommand.ts').then((module) => module.configCommand),
};
const usages: Record<keyof typeof commands, string> = { run: runUsage, threads: threadsUsage, show: showUsage, undo: undoUsage, demo: demoUsage, serve: serveUsage, worker: workerUsage, replay: replayUsage, inspect: inspectUsage, mcp: mcpUsage, config: configUsage };

const chartsUsage = `turnloom charts [--check]   write docs/charts/*.mmd|json and the generated doc sections
  --check             change nothing; exit 1 when any of them is stale`;

function usage(): string {
  return `turnloom <command>

commands:
  run "PROMPT"       one turn on a workspace, engine and worker in this process (see below)
  threads            the workspace's threads, newest first
  show [THREAD]      a thread's turns (default: the one that ran last); --request adds what the model was told
  undo [THREAD]      put back the files the last turn changed (again: the turn before)
  demo               one turn end to end on the embedded defaults (see below)
  serve              run the engine and its headless API, with a local worker (see below)
  worker             run turns for an engine elsewhere, over NATS (see below)
  replay FILE        run a recorded provider stream through the real SDK and the engine (see below)
  inspect            the live state-chart inspector in the browser, for an engine on NATS (see below)
  mcp add|list|remove|allow   MCP servers: the user file's, and those a project offers (see below)
  config             the configuration in effect here, each value with where it came from (see below)
  charts [--check]   write docs/charts/*.mmd|json and the generated doc sections;
                     --check exits 1 when any of them is stale
  help COMMAND       that command's options (or: turnloom COMMAND --help)
  --version, -v      turnloom's version

${Object.values(usages).join('\n\n')}`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'charts': {
      const { values } = parseOptions('charts', { args: rest, options: { help: { type: 'boolean', short: 'h', default: false }, check: { type: 'boolean', default: false } } });
      if (values.help) {
        console.log(chartsUsage);
        return 0;
      }
      const { runCharts } = await import('./chartsCommand.ts');
      const stale = await runCharts(packageRoot, values.check ?? false);
      for (const path of stale) console.log(`${values.check ? 'stale' : 'wrote'} ${path}`);
      if (values.check && stale.length > 0) {
        console.error('charts are stale: run `npx turnloom charts` and commit the result');
        return 1;
      }
      if (stale.length === 0) console.log('charts are up to date');
      return 0;
    }
    case 'run':
    case 'threads':
    case 'show':
    case 'undo':
    case 'demo':
    case 'serve':
    case 'worker':
    case 'replay':
    case 'inspect':
    case 'mcp':
    case 'config':
      return (await commands[command]())(rest);
    case 'help': {
      const [topic] = rest;
      if (topic === 'charts') console.log(chartsUsage);
      else if (topic !== undefined && topic in commands) console.log(usages[topic as keyof typeof commands]);
      else if (topic !== undefined) throw new UsageError(`no command "${topic}"; the commands are run, threads, show, undo, demo, serve, worker, replay, inspect, mcp, config and charts`);
      else console.log(usage());
      return 0;
    }
    case '--version':
    case '-v':
    case 'version':
      console.log(VERSION);
      return 0;
    case undefined:
    case '--help':
    case '-h':
      console.log(usage());
      return 0;
    default:
      throw new UsageError(`unknown command "${command}"; the commands are run, threads, show, undo, demo, serve, worker, replay, inspect, mcp, config and charts (turnloom --help)`);
  }
}

// Whatever any layer prints goes through the secret filter first, a crash included.
installRedactingConsole();
process.on('uncaughtException', (error) => {
  console.error(redact(inspect(error)));
  process.exit(1);
});
// A command waits on the bus, timers and child processes, some of them unref'd: while it runs, the process stays up,
// so nothing it still awaits can end it with an unsettled top-level await (exit 13).
const keepAlive = setInterval(() => undefined, 1 << 30);
try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // What a user can cause is one line to read, never a stack trace; anything else is our bug and keeps its stack.
  const message = userFacingMessage(error);
  if (message !== undefined) console.error(`turnloom: ${oneLine(redact(message))}`);
  else console.error(redact(inspect(error)));
  process.exitCode = error instanceof UsageError ? 2 : 1;
} finally {
  clearInterval(keepAlive);
}
