import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunReport } from '../../cli/run/embeddedRun.ts';
import { type Folder, type RunResult, git, gitRepo, plainFolder, run } from './runFixtures.ts';

const shown = (result: RunResult) => `code ${result.code} signal ${result.signal}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
const reportOf = (result: RunResult) => JSON.parse(result.stdout.trim().split('\n').at(-1)!) as RunReport;

/** A model that tries everything that changes a repository, whatever it is told: write, edit, a command, and a tool it was never offered. */
const hostile = {
  steps: [
    [
      { toolCall: { name: 'write', input: { path: 'pwned.txt', content: 'x' } } },
      { toolCall: { name: 'edit', input: { path: 'README.md', oldText: 'hello', newText: 'bye' } } },
      { toolCall: { name: 'bash', input: { command: 'touch ran.txt' } } },
    ],
    [{ text: 'Here is my plan.' }],
  ],
};

const folders: Folder[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) folder.remove();
});

function repository(): { repo: Folder; script: string } {
  const repo = gitRepo();
  const scripts = plainFolder();
  folders.push(repo, scripts);
  writeFileSync(join(repo.path, 'README.md'), 'hello\n');
  git(repo.path, 'add', '.');
  git(repo.path, 'commit', '-q', '-m', 'readme');
  const script = join(scripts.path, 'hostile.json');
  writeFileSync(script, JSON.stringify(hostile));
  return { repo, script };
}

describe('run --agent', () => {
  it('plan changes nothing and runs nothing, whatever the model asks and even with everything allowed; build does the work', { timeout: 90_000 }, async () => {
    const { repo, script } = repository();
    const planned = await run(['run', 'plan it', '--cwd', repo.path, '--script', script, '--agent', 'plan', '--mode', 'full', '--approve', 'auto', '--json'], { cwd: repo.path });
    expect(planned.code, shown(planned)).toBe(0);
    expect(planned.stderr).toMatch(/· mode read-only \(agent plan\), approvals: auto ·/);
    const plan = reportOf(planned);
    expect(plan.status).toBe('completed');
    expect(plan.text).toBe('Here is my plan.');
    expect(plan.toolCalls.map((call) => [call.name, call.state])).toEqual([
      ['write', 'error'],
      ['edit', 'error'],
      ['bash', 'error'],
    ]);
    expect(plan.toolCalls[0]!.error).toMatch(/the plan agent has no tool write; it may use read, list, glob, grep/);
    expect(existsSync(join(repo.path, 'pwned.txt'))).toBe(false);
    expect(existsSync(join(repo.path, 'ran.txt'))).toBe(false);
    expect(readFileSync(join(repo.path, 'README.md'), 'utf8')).toBe('hello\n');
    expect(git(repo.path, 'status', '--porcelain')).toBe('');

    const built = await run(['run', 'do it', '--cwd', repo.path, '--script', script, '--agent', 'build', '--approve', 'auto', '--json'], { cwd: repo.path });
    expect(built.code, shown(built)).toBe(0);
    expect(reportOf(built).toolCalls.map((call) => call.state)).toEqual(['completed', 'completed', 'completed']);
    expect(readFileSync(join(repo.path, 'pwned.txt'), 'utf8')).toBe('x');
    expect(readFileSync(join(repo.path, 'README.md'), 'utf8')).toBe('bye\n');
    expect(existsSync(join(repo.path, 'ran.txt'))).toBe(true);
  });

  it('takes agents from the configuration, and refuses an unknown one in one line', { timeout: 60_000 }, async () => {
    const { repo, script } = repository();
    const home = plainFolder();
    folders.push(home);
    mkdirSync(join(home.path, 'turnloom'));
    writeFileSync(join(home.path, 'turnloom', 'config.json'), JSON.stringify({ agents: { reviewer: { description: 'Reads only', instructions: 'Review the change.', tools: ['read', 'grep'], mode: 'read-only', model: 'reviewer-model' } } }));
    const env = { XDG_CONFIG_HOME: home.path };

    const unknown = await run(['run', 'hi', '--cwd', repo.path, '--script', script, '--agent', 'nobody'], { cwd: repo.path, env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toBe('turnloom: run: no agent "nobody"; the agents are build, plan, explore, general, reviewer (define more under "agents" in the configuration: docs/agents.md)');

    const reviewed = await run(['run', 'review', '--cwd', repo.path, '--script', script, '--agent', 'reviewer', '--approve', 'auto', '--json'], { cwd: repo.path, env });
    expect(reviewed.code, shown(reviewed)).toBe(0);
    expect(reportOf(reviewed).toolCalls[2]!.error).toMatch(/the reviewer agent has no tool bash; it may use read, grep/);
    expect(git(repo.path, 'status', '--porcelain')).toBe('');

    // The agent's model, unless a flag names one.
    const shownRun = await run(['run', 'review', '--cwd', repo.path, '--script', script, '--agent', 'reviewer', '--approve', 'auto'], { cwd: repo.path, env });
    expect(shownRun.stderr).toMatch(/turnloom run — scripted \(reviewer-model\), .*agent: reviewer/);
    const flagged = await run(['run', 'review', '--cwd', repo.path, '--script', script, '--agent', 'reviewer', '--model', 'other', '--approve', 'auto'], { cwd: repo.path, env });
    expect(flagged.stderr).toMatch(/turnloom run — scripted \(other\)/);
  });
});
