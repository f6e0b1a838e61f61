import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbStore } from '../../adapters/lmdbStore.ts';
import { type Folder, git, gitRepo, plainFolder } from './runFixtures.ts';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));
const require = createRequire(import.meta.url);
const everythingPackage = dirname(require.resolve('@modelcontextprotocol/server-everything/package.json'));
const everythingBin = join(everythingPackage, (require(join(everythingPackage, 'package.json')) as { bin: Record<string, string> }).bin['mcp-server-everything']!);

/** An edit that needs a yes, a command that fails loudly on stderr, and an answer. */
const script = {
  chunkSize: 64,
  steps: [
    [{ text: 'Fixing the greeting.' }, { toolCall: { name: 'edit', input: { path: 'src/greet.js', oldText: "'helo'", newText: "'hello'" } } }],
    [{ toolCall: { name: 'bash', input: { command: "node -e \"console.error('widget check: expected 3 widgets, found 2'); process.exit(1)\"" } } }],
    [{ text: 'The greeting is fixed; the widget check still fails.' }],
  ],
};

/**
 * `turnloom run` in a real pseudo-terminal, as tmux or a person's terminal
 * gives one: `script` makes the terminal and passes our keystrokes to it.
 */
function inTerminal(args: string[], cwd: string, env: Record<string, string>) {
  const command = ['node', bin, ...args].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(TURNLOOM_|OPENAI_|ANTHROPIC_|NO_COLOR|FORCE_COLOR)/.test(name))) as NodeJS.ProcessEnv;
  const child: ChildProcess = spawn('script', ['-qfec', `stty cols 120 rows 40; exec ${command}`, '/dev/null'], {
    cwd,
    env: { ...base, TERM: 'xterm-256color', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout!.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    screen: () => screen,
    type: (keys: string) => child.stdin!.write(keys),
    waitFor: (text: string) => expect.poll(() => screen, { timeout: 30_000, interval: 50 }).toContain(text),
    exited,
    kill: () => child.kill('SIGKILL'),
  };
}

describe('turnloom run in a pseudo-terminal', () => {
  const folders: Folder[] = [];
  let running: ReturnType<typeof inTerminal> | undefined;
  afterEach(() => {
    running?.kill();
    folders.splice(0).forEach((folder) => folder.remove());
  });

  async function session(env: Record<string, string>) {
    const repo = gitRepo();
    const data = plainFolder('turnloom-run-tty-data-');
    folders.push(repo, data);
    mkdirSync(join(repo.path, 'src'));
    writeFileSync(join(repo.path, 'src/greet.js'), "export const greet = (name) => `${'helo'} ${name}`;\n");
    git(repo.path, 'add', '-A');
    git(repo.path, 'commit', '-q', '-m', 'greet');
    const scriptFile = join(data.path, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(script));
    running = inTerminal(['run', 'fix the greeting', '--script', scriptFile, '--data', join(data.path, 'threads'), '--mode', 'ask'], repo.path, env);
    const terminal = running;
    await terminal.waitFor('? allow edit src/greet.js');
    const beforeQuestion = terminal.screen().slice(0, terminal.screen().indexOf('? allow edit'));
    terminal.type('y\r');
    await terminal.waitFor('? allow bash');
    terminal.type('y\r');
    const code = await terminal.exited;
    return { code, screen: terminal.screen(), beforeQuestion, repo };
  }

  it('shows the diff before the edit question, the stderr tail of a failed command, the final diff and how to continue', { timeout: 90_000 }, async () => {
    const { code, screen, beforeQuestion, repo } = await session({});
    const plain = screen.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replaceAll('\r\n', '\n');
    expect(code, plain).toBe(0);
    // What the question allows, shown before it is asked, in colour.
    expect(beforeQuestion.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/changes src\/greet\.js {2}\+1 −1[\s\S]*--- a\/src\/greet\.js[\s\S]*-export const greet = \(name\) => `\$\{'helo'\} \$\{name\}`;[\s\S]*\+export const greet = \(name\) => `\$\{'hello'\} \$\{name\}`;/);
    expect(beforeQuestion).toContain('\x1b[31m-export const greet');
    expect(beforeQuestion).toContain('\x1b[32m+export const greet');
    // The failed command: its mark, its exit and what it printed on stderr.
    expect(plain).toMatch(/✗ bash node -e .* \d+\.\d s: exit code 1\n[\s\S]*│ widget check: expected 3 widgets, found 2/);
    // The end: the turn's diff from its checkpoint and the exact command to continue.
    expect(plain).toMatch(/checkpoint turn_\w+: 1 file changed, \+1 −1[\s\S]*diff --git a\/src\/greet\.js b\/src\/greet\.js/);
    expect(plain).toMatch(/continue this thread: turnloom run --thread thr_\w+ --data \S+ "…"/);
    expect(plain).toMatch(/thread thr_\w+ · mode ask, approvals: ask/);
    expect(readFileSync(join(repo.path, 'src/greet.js'), 'utf8')).toContain("'hello'");
  });

  it('prints no escape at all under NO_COLOR, in the same terminal', { timeout: 90_000 }, async () => {
    const { code, screen } = await session({ NO_COLOR: '1' });
    expect(code, screen).toBe(0);
    expect(screen).toContain('-export const greet');
    expect(screen).toContain('│ widget check: expected 3 widgets, found 2\r\n');
    expect(screen).not.toContain('\x1b');
  });

  it('one key answers a question, no Enter; the same key again and Enter right after are not steered into the turn', { timeout: 90_000 }, async () => {
    const repo = gitRepo();
    const data = plainFolder('turnloom-run-tty-data-');
    folders.push(repo, data);
    const scriptFile = join(data.path, 'script.json');
    const steps = [[{ text: 'Writing it.' }, { toolCall: { name: 'write', input: { path: 'a.txt', content: 'hi\n' } } }], [{ text: 'Done, and now a few slow words. '.repeat(4) }]];
    writeFileSync(scriptFile, JSON.stringify({ chunkSize: 4, delayMs: 20, steps }));
    const threads = join(data.path, 'threads');
    running = inTerminal(['run', 'write a.txt', '--script', scriptFile, '--data', threads, '--mode', 'ask'], repo.path, {});
    await running.waitFor('? allow write a.txt');
    // A key pressed twice and Enter out of habit, in one burst, while the turn goes on.
    running.type('yy\r');
    const code = await running.exited;
    const plain = running.screen().replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
    expect(code, plain).toBe(0);
    expect(readFileSync(join(repo.path, 'a.txt'), 'utf8')).toBe('hi\n');
    expect(plain).toMatch(/\[n\]o: y\r?\n/);
    expect(plain).not.toContain('steered');
    const store = LmdbStore.open(threads);
    try {
      const threadId = /thread (thr_\w+)/.exec(plain)![1]!;
      const view = store.readView(threadId)!;
      const turns = view.turnIds.map((id) => view.turns[id]!);
      expect(turns.map((turn) => [turn.state, turn.messages[0].parts.map((part) => part.text), turn.inbox.length])).toEqual([['completed', ['write a.txt'], 0]]);
    } finally {
      await store.close();
    }
  });

  it('asks once on the terminal before starting a server the project offers (.mcp.json), starts it on yes and remembers that spec', { timeout: 90_000 }, async () => {
    const repo = gitRepo();
    const data = plainFolder('turnloom-run-tty-data-');
    folders.push(repo, data);
    writeFileSync(join(repo.path, '.mcp.json'), JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everythingBin, 'stdio'] } } }));
    const scriptFile = join(data.path, 'script.json');
    writeFileSync(scriptFile, JSON.stringify({ steps: [[{ text: 'Done.' }]] }));
    const config = join(data.path, 'config');
    running = inTerminal(['run', 'hi', '--script', scriptFile, '--data', join(data.path, 'threads')], repo.path, { XDG_CONFIG_HOME: config, XDG_CACHE_HOME: join(data.path, 'cache') });
    await running.waitFor('asks to start MCP server "everything"');
    expect(running.screen()).toContain(`${process.execPath} ${everythingBin} stdio`);
    running.type('y\r');
    const code = await running.exited;
    const plain = running.screen().replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
    expect(code, plain).toBe(0);
    expect(plain).toMatch(/mcp everything: \d+ tools/);
    const remembered = JSON.parse(readFileSync(join(config, 'turnloom', 'config.json'), 'utf8')) as { mcpAllowed?: Record<string, string> };
    expect(remembered.mcpAllowed?.everything).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a running command shows its elapsed time and its latest output line while it runs', { timeout: 90_000 }, async () => {
    const repo = gitRepo();
    const data = plainFolder('turnloom-run-tty-data-');
    folders.push(repo, data);
    const scriptFile = join(data.path, 'script.json');
    const command = 'for i in 1 2 3 4 5 6; do echo "building part $i of 6"; sleep 0.4; done';
    writeFileSync(scriptFile, JSON.stringify({ steps: [[{ toolCall: { name: 'bash', input: { command } } }], [{ text: 'Built.' }]] }));
    running = inTerminal(['run', 'build it', '--script', scriptFile, '--data', join(data.path, 'threads'), '--mode', 'full'], repo.path, {});
    // Seen while it runs: a later line than the first, under a clock that has moved.
    await expect.poll(() => running!.screen(), { timeout: 30_000, interval: 50 }).toMatch(/bash for i in .*  [0-9]\.[1-9] s\x1b\[2m · building part [3-6] of 6/);
    expect(await running.exited).toBe(0);
    expect(running.screen()).toMatch(/✓\x1b\[39m bash for i in .*  2\.\d s/);
  });
});

