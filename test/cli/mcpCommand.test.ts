import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Folder, type RunResult, gitRepo, plainFolder, run } from './runFixtures.ts';

const require = createRequire(import.meta.url);
const everythingPackage = dirname(require.resolve('@modelcontextprotocol/server-everything/package.json'));
const everythingBin = join(everythingPackage, (require(join(everythingPackage, 'package.json')) as { bin: Record<string, string> }).bin['mcp-server-everything']!);

const shown = (result: RunResult) => `code ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

let folders: Folder[] = [];
afterEach(() => {
  for (const folder of folders) folder.remove();
  folders = [];
});

function setting() {
  const repo = gitRepo();
  const home = plainFolder();
  folders.push(repo, home);
  const userFile = join(home.path, 'config', 'turnloom', 'config.json');
  mkdirSync(dirname(userFile), { recursive: true });
  const env = { XDG_CONFIG_HOME: join(home.path, 'config'), XDG_DATA_HOME: join(home.path, 'data'), MEMORY_FILE_PATH: join(home.path, 'memory.jsonl'), WEB_TOKEN: 'web-token-value' };
  const script = join(home.path, 'script.json');
  const turnloom = (args: string[], input?: string) => run(args, { cwd: repo.path, env, ...(input !== undefined ? { input } : {}) });
  const runTurn = (steps: unknown[], extra: string[] = ['--approve', 'auto']) => {
    writeFileSync(script, JSON.stringify({ steps }));
    return turnloom(['run', 'go', '--cwd', repo.path, '--script', script, '--provider', 'scripted', ...extra]);
  };
  return { repo, userFile, turnloom, runTurn };
}

/** The real reference server from npm, run by this Node as its bin says. */
const memory = { command: process.execPath, args: [everythingBin, 'stdio'] };

describe('turnloom mcp and the mcpServers shape', () => {
  it('runs a server written as Claude Desktop writes it (real server-everything), refuses a name under both keys', { timeout: 90_000 }, async () => {
    const { userFile, runTurn } = setting();
    writeFileSync(userFile, JSON.stringify({ model: 'kept', mcpServers: { memory: { type: 'stdio', ...memory } } }));
    const ran = await runTurn([[{ text: 'Done.' }]]);
    expect(ran.code, shown(ran)).toBe(0);
    expect(ran.stderr).toMatch(/mcp memory: \d+ tools/);

    writeFileSync(userFile, JSON.stringify({ mcp: { memory }, mcpServers: { memory } }));
    const both = await runTurn([[{ text: 'Done.' }]]);
    expect(both.code).toBe(2);
    expect(both.stderr.trim()).toBe(`turnloom: ${userFile}: mcpServers.memory: a server named "memory" is under both "mcp" and "mcpServers"; keep one of them`);
  });

  it('mcp add, list and remove edit the user file and keep the rest of it', { timeout: 90_000 }, async () => {
    const { userFile, turnloom } = setting();
    writeFileSync(userFile, '{\n  "model": "kept",\n  "agent": "build"\n}\n');
    const added = await turnloom(['mcp', 'add', 'memory', '--env', 'MEMORY_FILE_PATH=${MEMORY_FILE_PATH}', '--', memory.command, ...memory.args]);
    expect(added.code, shown(added)).toBe(0);
    const web = await turnloom(['mcp', 'add', 'web', '--url', 'https://mcp.example.com/mcp', '--header', 'Authorization: Bearer ${WEB_TOKEN}']);
    expect(web.code, shown(web)).toBe(0);
    const written = JSON.parse(readFileSync(userFile, 'utf8')) as Record<string, unknown>;
    expect(written).toEqual({
      model: 'kept',
      agent: 'build',
      mcp: { memory: { command: memory.command, args: memory.args, env: { MEMORY_FILE_PATH: '${MEMORY_FILE_PATH}' } }, web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${WEB_TOKEN}' } } },
    });
    const again = await turnloom(['mcp', 'add', 'memory', '--', 'node']);
    expect(again.code).toBe(2);
    const listed = await turnloom(['mcp', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ name: 'memory', from: 'user' }), expect.objectContaining({ name: 'web', from: 'user' })]);
    const removed = await turnloom(['mcp', 'remove', 'web']);
    expect(removed.code, shown(removed)).toBe(0);
    expect(Object.keys((JSON.parse(readFileSync(userFile, 'utf8')) as { mcp: object }).mcp)).toEqual(['memory']);
  });

  it('a project’s .mcp.json server is skipped without a terminal, runs once allowed, and asks again when its spec changes; a cwd is refused', { timeout: 120_000 }, async () => {
    const { repo, userFile, turnloom, runTurn } = setting();
    writeFileSync(userFile, JSON.stringify({ model: 'kept' }));
    const mcpFile = join(repo.path, '.mcp.json');
    writeFileSync(mcpFile, JSON.stringify({ mcpServers: { memory } }));
    const skipped = await runTurn([[{ text: 'Done.' }]]);
    expect(skipped.code, shown(skipped)).toBe(0);
    expect(skipped.stderr).toContain(`turnloom: mcp memory (${mcpFile}): not started: the project asks for it; to allow it: turnloom mcp allow memory\n`);
    expect(skipped.stderr).not.toMatch(/mcp memory: \d+ tools/);

    const allowed = await turnloom(['mcp', 'allow', 'memory', '--cwd', repo.path]);
    expect(allowed.code, shown(allowed)).toBe(0);
    expect(JSON.parse(readFileSync(userFile, 'utf8'))).toEqual({ model: 'kept', mcpAllowed: { memory: expect.stringMatching(/^[0-9a-f]{64}$/) } });
    const started = await runTurn([[{ toolCall: { name: 'memory__echo', input: { message: 'hi' } } }], [{ text: 'Done.' }]]);
    expect(started.code, shown(started)).toBe(0);
    expect(started.stderr).toMatch(/mcp memory: \d+ tools/);

    writeFileSync(mcpFile, JSON.stringify({ mcpServers: { memory: { ...memory, args: [...memory.args, '--changed'] } } }));
    const changed = await runTurn([[{ text: 'Done.' }]]);
    expect(changed.stderr).toContain('not started: the project asks for it and its spec changed since you allowed it; to allow it: turnloom mcp allow memory');

    writeFileSync(mcpFile, JSON.stringify({ mcpServers: { memory: { ...memory, cwd: '.' } } }));
    const cwd = await turnloom(['mcp', 'allow', 'memory', '--cwd', repo.path]);
    expect(cwd.code).toBe(2);
    expect(cwd.stderr).toContain('a project may not set a server’s cwd');
  });

  it('an MCP tool’s approval shows its arguments, long ones cut', { timeout: 90_000 }, async () => {
    const { userFile, runTurn } = setting();
    writeFileSync(userFile, JSON.stringify({ mcp: { memory } }));
    const entities = [{ name: 'turnloom', entityType: 'project', observations: ['x'.repeat(2_000)] }];
    const asked = await runTurn([[{ toolCall: { name: 'memory__echo', input: { message: JSON.stringify({ entities }) } } }], [{ text: 'Done.' }]], ['--approve', 'ask']);
    expect(asked.code, shown(asked)).toBe(0);
    const line = (asked.stdout + asked.stderr).split('\n').find((one) => one.startsWith('? allow'))!;
    expect(line).toMatch(/^\? allow memory__echo \{"message":"\{\\"entities\\":\[\{\\"name\\":\\"turnloom\\".*x+…$/);
    expect(line.length).toBeLessThan(340);
  });
});
