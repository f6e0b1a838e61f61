import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const benchDir = fileURLToPath(new URL('.', import.meta.url));

/** Files whose presence says `npm install` in bench/ has run with today's bench/package.json (better-sqlite3 built, the peers there). */
const installed = [
  'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
  'node_modules/@langchain/langgraph/package.json',
  'node_modules/@langchain/langgraph-checkpoint-sqlite/package.json',
  'node_modules/@langchain/core/package.json',
  'node_modules/@openai/agents/package.json',
  'node_modules/zod/package.json',
];

/**
 * The benchmark-only dependencies (better-sqlite3, which compiles from
 * source, and the libraries the peers suite compares with) live in bench/,
 * out of the main install, and are installed on first use only. npm's
 * output goes to stderr: stdout is reserved for `--json`.
 */
export async function ensureBenchDependencies(): Promise<void> {
  if (installed.every((path) => existsSync(join(benchDir, path)))) return;
  process.stderr.write('installing the benchmark-only dependencies in bench/ (better-sqlite3 builds from source: a minute or two)…\n');
  await new Promise<void>((resolve, reject) => {
    const npm = spawn('npm', ['install', '--no-audit', '--no-fund'], { cwd: benchDir, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    npm.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    npm.on('error', reject);
    npm.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm install in ${benchDir} exited with ${code}`))));
  });
}

/** The installed version of a benchmark-only package, as its package.json says. */
export function installedVersion(name: string): string {
  const path = join(benchDir, 'node_modules', name, 'package.json');
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version : 'not installed';
}
