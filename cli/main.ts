import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { runCharts } from './chartsCommand.ts';
import { UsageError, oneLine, parseOptions, userFacingMessage } from './cliErrors.ts';
import { demoCommand, demoUsage } from './demoCommand.ts';
import { replayCommand, replayUsage } from './replayCommand.ts';
import { installRedactingConsole, redact } from './redact.ts';
import { serveCommand, serveUsage } from './serveCommand.ts';

/** The package root: charts belong to the package, wherever the command runs from. */
const packageRoot = fileURLToPath(new URL('..', import.meta.url));

const usage = `turnloom <command>

commands:
  demo               one turn end to end on the embedded defaults (see below)
  serve              run the engine and its headless API (see below)
  replay FILE        run a recorded provider stream through the real SDK and the engine (see below)
  charts [--check]   write docs/charts/*.mmd|json and the generated doc sections;
                     --check exits 1 when any of them is stale

${demoUsage}

${serveUsage}

${replayUsage}`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'charts': {
      const { values } = parseOptions('charts', { args: rest, options: { help: { type: 'boolean', short: 'h', default: false }, check: { type: 'boolean', default: false } } });
      if (values.help) {
        console.log(usage);
        return 0;
      }
      const stale = await runCharts(packageRoot, values.check ?? false);
      for (const path of stale) console.log(`${values.check ? 'stale' : 'wrote'} ${path}`);
      if (values.check && stale.length > 0) {
        console.error('charts are stale: run `npx turnloom charts` and commit the result');
        return 1;
      }
      if (stale.length === 0) console.log('charts are up to date');
      return 0;
    }
    case 'demo':
      return demoCommand(rest);
    case 'serve':
      return serveCommand(rest);
    case 'replay':
      return replayCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(usage);
      return 0;
    default:
      throw new UsageError(`unknown command "${command}"; the commands are demo, serve, replay and charts (turnloom --help)`);
  }
}

// Whatever any layer prints goes through the secret filter first, a crash included.
installRedactingConsole();
process.on('uncaughtException', (error) => {
  console.error(redact(inspect(error)));
  process.exit(1);
});
try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // What a user can cause is one line to read, never a stack trace; anything else is our bug and keeps its stack.
  const message = userFacingMessage(error);
  if (message !== undefined) console.error(`turnloom: ${oneLine(redact(message))}`);
  else console.error(redact(inspect(error)));
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
