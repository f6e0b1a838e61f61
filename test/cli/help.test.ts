import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { runCli } from './runCli.ts';

const runTurnloom = (args: string[]) => runCli(args, { cwd: tmpdir() });

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

  it('help of a command that does not exist is one line and exit 2', async () => {
    const result = await runTurnloom(['help', 'nope']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual(['turnloom: no command "nope"; the commands are run, threads, show, undo, demo, serve, worker, replay, inspect, mcp, config and charts']);
  });
});
