import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const benchDir = fileURLToPath(new URL('.', import.meta.url));

/** better-sqlite3 compiles from source, so it lives in bench/ and is installed on first use only. */
function ensureBenchDependencies(): void {
  if (existsSync(`${benchDir}/node_modules/better-sqlite3/build/Release/better_sqlite3.node`)) return;
  console.log('installing the benchmark-only dependencies in bench/ (better-sqlite3 builds from source: a minute or two)…');
  execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: benchDir, stdio: 'inherit' });
}

const suites: Record<string, () => Promise<void>> = {
  store: async () => {
    ensureBenchDependencies();
    await (await import('./storeBench.ts')).storeBench();
  },
  bus: async () => {
    await (await import('./busBench.ts')).busBench();
  },
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in suites));
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(', ')}; choose from: ${Object.keys(suites).join(', ')}`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : Object.keys(suites)) {
  await suites[name]!();
  console.log();
}
