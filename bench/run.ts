/**
 * `npm run bench [-- --json] [-- --smoke] [-- NAME…]`: runs the suites by
 * name (all of them when none is named), prints each figure as a table row
 * as it comes in, and writes every figure to `bench/results.json`. With
 * `--json`, stdout carries that one JSON object and nothing else (the table
 * goes nowhere, progress goes to stderr). A missed target is a result, not
 * a failure: the exit code is non-zero only when a suite throws.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Figure, type Suite, describeTarget } from './figure.ts';

/** Where the figures go; the smoke test points it at a temp file so it never overwrites a real run's results. */
const resultsPath = process.env.TURNLOOM_BENCH_RESULTS ?? fileURLToPath(new URL('./results.json', import.meta.url));

/** Each suite by name, with the module and export it lives in; modules load only when their suite runs. */
const suites: Record<string, { module: string; load: () => Promise<Record<string, unknown>>; exportName: string }> = {
  engine: { module: './engineBench.ts', load: () => import('./engineBench.ts'), exportName: 'engineSuite' },
  store: { module: './storeBench.ts', load: () => import('./storeBench.ts'), exportName: 'storeSuite' },
  bus: { module: './busBench.ts', load: () => import('./busBench.ts'), exportName: 'busSuite' },
  // Written beside this runner; until they exist the suite reports one line instead of a crash.
  pipeline: { module: './pipelineBench.ts', load: () => import('./pipelineBench.ts' as string), exportName: 'pipelineSuite' },
  startup: { module: './startupBench.ts', load: () => import('./startupBench.ts' as string), exportName: 'startupSuite' },
  cluster: { module: './clusterBench.ts', load: () => import('./clusterBench.ts'), exportName: 'clusterSuite' },
  peers: { module: './peersBench.ts', load: () => import('./peersBench.ts'), exportName: 'peersSuite' },
  capacity: { module: './capacityBench.ts', load: () => import('./capacityBench.ts'), exportName: 'capacitySuite' },
};

interface Options {
  json: boolean;
  smoke: boolean;
  names: string[];
}

function parseArguments(argv: readonly string[]): Options {
  const names = argv.filter((argument) => !argument.startsWith('--'));
  return { json: argv.includes('--json'), smoke: argv.includes('--smoke'), names: names.length > 0 ? names : Object.keys(suites) };
}

/** The suite, or why it cannot run (its module is not there yet, or does not export it). */
async function loadSuite(name: string): Promise<Suite | string> {
  const { module, load, exportName } = suites[name]!;
  let loaded: Record<string, unknown>;
  try {
    loaded = await load();
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Only the suite's own file missing counts; a module it imports missing is a real failure.
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${fileURLToPath(new URL(module, import.meta.url))}'`)) return `${module} is not there yet`;
    throw error;
  }
  const suite = loaded[exportName] as Suite | undefined;
  return suite && typeof suite.run === 'function' ? suite : `${module} does not export ${exportName} yet`;
}

// ---------------------------------------------------------------- the table

const columns = ['key', 'figure', 'value', 'comparison', 'ratio', 'target', ''] as const;
const widths = [22, 38, 14, 34, 8, 9, 1];

const number = (value: number) => {
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
};

const ratioText = (ratio: number) => `${ratio >= 0.1 ? ratio.toFixed(2) : ratio.toPrecision(2)}×`;

const row = (cells: readonly string[]) => cells.map((cell, n) => cell.padEnd(widths[n]!)).join(' ').trimEnd();

function figureRow(figure: Figure): string {
  const comparison = figure.comparison ? `${number(figure.comparison.value)} ${figure.unit}, ${figure.comparison.label}` : '—';
  const ratio = figure.ratio === null ? '—' : ratioText(figure.ratio);
  const verdict = figure.meetsTarget === null ? '' : figure.meetsTarget ? '✓' : '✗';
  return row([figure.key, figure.title, `${number(figure.value)} ${figure.unit}`, comparison, ratio, describeTarget(figure.target), verdict]);
}

// ---------------------------------------------------------------- the run

function machine() {
  const cores = cpus();
  return { cpus: cores.length, cpuModel: cores[0]?.model.trim() ?? 'unknown', memGiB: Math.round((totalmem() / 1_073_741_824) * 10) / 10, node: process.version, platform: `${process.platform}-${process.arch}` };
}

const resultOf = ({ title, value, unit, comparison, target, ratio, meetsTarget, note }: Figure) => ({ title, value, unit, comparison, target, ratio, meetsTarget, note: note ?? null });

async function main(): Promise<number> {
  const options = parseArguments(process.argv.slice(2));
  const unknown = options.names.filter((name) => !(name in suites));
  if (unknown.length > 0) {
    console.error(`unknown benchmark ${unknown.join(', ')}; choose from: ${Object.keys(suites).join(', ')}`);
    return 2;
  }
  const unknownFlags = process.argv.slice(2).filter((argument) => argument.startsWith('--') && argument !== '--json' && argument !== '--smoke');
  if (unknownFlags.length > 0) {
    console.error(`unknown option ${unknownFlags.join(', ')}; usage: npm run bench [-- --json] [-- --smoke] [-- NAME…]`);
    return 2;
  }
  // The table on stdout, unless stdout is reserved for the JSON object: then whatever a suite logs goes to stderr.
  if (options.json) console.log = console.error;
  const print = options.json ? (_line: string) => undefined : (line: string) => console.log(line);
  const progress = (line: string) => process.stderr.write(`${line}\n`);

  const startedAt = new Date();
  const figures: Figure[] = [];
  let failed = false;
  print(row([...columns]));
  print(row(widths.map((width) => '─'.repeat(width))));
  for (const name of options.names) {
    const suite = await loadSuite(name).catch((error: unknown) => `could not load: ${error instanceof Error ? error.message : String(error)}`);
    if (typeof suite === 'string') {
      (options.json ? progress : print)(`${name}: skipped, ${suite}`);
      continue;
    }
    progress(`${name}: running${options.smoke ? ' (smoke)' : ''}…`);
    const suiteStarted = performance.now();
    const seen = new Set<string>();
    const take = (figure: Figure) => {
      if (seen.has(figure.key)) return;
      seen.add(figure.key);
      figures.push(figure);
      print(figureRow(figure));
    };
    // Suites that can say when each figure is ready get `onFigure`; the rest are printed when they finish.
    const runOptions = { smoke: options.smoke, onFigure: take };
    try {
      for (const figure of await suite.run(runOptions)) take(figure);
      progress(`${name}: done in ${((performance.now() - suiteStarted) / 1_000).toFixed(1)} s`);
    } catch (error) {
      failed = true;
      (options.json ? progress : print)(`${name}: FAILED, ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
  }

  const results = {
    machine: machine(),
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(Date.now() - startedAt.getTime()),
    figures: Object.fromEntries(figures.map((figure) => [figure.key, resultOf(figure)])),
  };
  writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
  if (options.json) process.stdout.write(`${JSON.stringify(results)}\n`);
  else {
    const missed = figures.filter((figure) => figure.meetsTarget === false).length;
    print(`\n${figures.length} figures, ${missed} missed ${missed === 1 ? 'its target' : 'their targets'}; ${(results.durationMs / 1_000).toFixed(0)} s; written to ${relative(process.cwd(), resultsPath)}`);
    for (const figure of figures) if (figure.note) print(`  ${figure.key}: ${figure.note}`);
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
// Everything is closed by now; should a failed suite have left a handle open, the run still ends.
setTimeout(() => process.exit(), 5_000).unref();
