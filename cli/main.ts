import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ZodError } from 'zod';
import { TurnloomError } from '../services/errors.ts';
import { runCharts } from './chartsCommand.ts';
import { demoCommand, demoUsage } from './demoCommand.ts';
import { replayCommand, replayUsage } from './replayCommand.ts';
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
      const { values } = parseArgs({ args: rest, options: { check: { type: 'boolean', default: false } } });
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
      console.log(usage);
      return 0;
    default:
      console.error(`unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // A typed error is the user's to read, not a stack trace; anything else is ours.
  if (error instanceof TurnloomError || error instanceof ZodError) console.error(`turnloom: ${error.message}`);
  else console.error(error);
  process.exitCode = 1;
}
