import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runCharts } from './chartsCommand.ts';

/** The package root: charts belong to the package, wherever the command runs from. */
const packageRoot = fileURLToPath(new URL('..', import.meta.url));

const usage = `turnloom <command>

commands:
  charts [--check]   write docs/charts/*.mmd|json and the generated doc sections;
                     --check exits 1 when any of them is stale`;

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

process.exitCode = await main(process.argv.slice(2));
