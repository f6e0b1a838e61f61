import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from './runCli.ts';

const runTurnloom = (args: string[]) => runCli(args, { cwd: tmpdir() });

/** The packages `file` loads before any of its code runs: its static imports, followed through our own files (a dynamic `import()` is not followed). */
function staticPackages(file: string, seen = new Set<string>(), packages = new Set<string>()): Set<string> {
  if (seen.has(file)) return packages;
  seen.add(file);
  for (const [, kind, specifier] of readFileSync(file, 'utf8').matchAll(/^(import|export)\s(?!type\s)[^'"]*?from\s+'([^']+)'/gm)) {
    // Our files import by `.ts`; a relative `.js` is code quoted in a string (the demo's project), not an import.
    if (kind && specifier!.endsWith('.ts')) staticPackages(resolve(dirname(file), specifier!), seen, packages);
    else if (!specifier!.startsWith('.') && !specifier!.startsWith('node:')) packages.add(specifier!);
  }
  return packages;
}

const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('turnloom --version and help', () => {
  it.each(['--version', '-v'])('%s prints the package version alone', async (flag) => {
    const result = await runTurnloom([flag]);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(packageVersion);
  });

  it.each(['run', 'threads', 'show', 'undo', 'demo', 'serve', 'worker', 'replay', 'inspect', 'mcp', 'config', 'charts'])('help %s and %s --help print that command\'s own help, not the global one', async (command) => {
    const [byHelp, byFlag] = await Promise.all([runTurnloom(['help', command]), runTurnloom([command, '--help'])]);
    expect(byHelp.code).toBe(0);
    expect(byHelp.stdout.startsWith(`turnloom ${command}`)).toBe(true);
    expect(byHelp.stdout).not.toContain('commands:');
    expect(byFlag.stdout).toBe(byHelp.stdout);
  });

  it('starts without any package: --help and --version load node built-ins and our own few files only', () => {
    // Zod and jsonc-parser once came in through an error helper's import and doubled the start (0.1 s to 0.2 s here).
    expect([...staticPackages(fileURLToPath(new URL('../../cli/main.ts', import.meta.url)))]).toEqual([]);
  });

  it('help of a command that does not exist is one line and exit 2', async () => {
    const result = await runTurnloom(['help', 'nope']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual(['turnloom: no command "nope"; the commands are run, threads, show, undo, demo, serve, worker, replay, inspect, mcp, config and charts']);
  });
});
