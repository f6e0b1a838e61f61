import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { runCli } from '../support/cliProcess.ts';
import { tempDir } from '../support/tempDir.ts';

/**
 * Every turn asks to run a command; once approved, its next model call
 * fails for good the first time a prompt is seen, and answers the second
 * time. So three turns give a failure, an interruption and a completion.
 */
const script = {
  steps: [
    [{ text: 'Running it.' }, { toolCall: { name: 'bash', input: { command: 'echo built >> built.txt' }, approval: true } }],
    [{ error: { kind: 'authentication', message: 'the key was refused', status: 401 }, times: 1 }, { text: 'Done.' }],
  ],
};

const dir = tempDir('turnloom-serve-logs-');
afterAll(() => dir.remove());
let runs = 0;

/**
 * Runs `serve` with a local worker and three turns through a client; then a
 * request it refuses, a revert of the completed turn, and a second worker
 * that joins and is killed; then stops it and returns what it logged.
 */
async function serveThreeTurns(format: 'pretty' | 'json'): Promise<string> {
  const prefix = `logs${process.pid}x${++runs}`;
  const scriptPath = join(dir.path, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(script));
  // A git repository, so turns keep checkpoints to revert.
  const workspace = join(dir.path, `ws${runs}`);
  mkdirSync(workspace);
  execFileSync('git', ['init', '-q', workspace]);
  const serve = runCli(['serve', '--nats', inject('natsUrl'), '--prefix', prefix, '--data', join(dir.path, `data${runs}`), '--workspace', workspace, '--script', scriptPath, '--lease-timeout', '2', '--log-format', format]);
  const worker = runCli(['worker', '--nats', inject('natsUrl'), '--prefix', prefix, '--workspace', workspace, '--env', 'other', '--id', `doomed${runs}`, '--script', scriptPath]);
  const bus = await NatsBus.connect({ servers: inject('natsUrl') });
  try {
    await serve.waitFor('local worker');
    const api = new TurnloomClient(bus, { prefix });
    const turn = async (text: string, answer: (threadId: string, approvalId: string) => Promise<unknown>) => {
      const { threadId } = await api.call('thread.create', {});
      const { turnId } = await api.call('turn.start', { threadId, input: { text } });
      await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.length, { timeout: 20_000 }).toBe(1);
      const [approval] = (await api.call('approval.list', { threadId })).approvals;
      await answer(threadId, approval!.id);
      await expect.poll(async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!.state, { timeout: 20_000 }).toMatch(/^(completed|failed|interrupted)$/);
      return { threadId, turnId };
    };
    await turn('build it', (threadId, approvalId) => api.call('approval.respond', { threadId, approvalId, decision: 'approve' }));
    await turn('stop it', (threadId) => api.call('turn.interrupt', { threadId }));
    const done = await turn('build it', (threadId, approvalId) => api.call('approval.respond', { threadId, approvalId, decision: 'approve' }));
    await expect(api.call('turn.start', { threadId: 'thr_nobody', input: { text: 'hello?' } })).rejects.toMatchObject({ code: 'not_found' });
    await api.call('checkpoint.revert', { threadId: done.threadId, checkpointId: done.turnId });
    await serve.waitFor(/revert done/);
    await serve.waitFor(/worker joined.*doomed/);
    await worker.kill('SIGKILL');
    await serve.waitFor(/worker lost.*doomed/, 20_000);
    await serve.kill('SIGTERM');
    return serve.output();
  } finally {
    await worker.kill('SIGKILL');
    await serve.kill('SIGKILL');
    await bus.close();
  }
}

describe('serve logs one line per thing that matters', () => {
  it('on a terminal-style log: turns requested, leased and settled (failed, interrupted, completed, with durations), approvals asked and answered, a refused request, a revert, workers joining and lost', async () => {
    const output = await serveThreeTurns('pretty');
    const lines = output.split('\n');
    const count = (pattern: RegExp) => lines.filter((line) => pattern.test(line)).length;
    expect(count(/^\d\d:\d\d:\d\d\.\d{3} info  worker joined workerId=\S+ environment=default/)).toBe(1);
    expect(count(/ info  turn requested threadId=thr_\w+ turnId=turn_\w+ provider=scripted$/)).toBe(3);
    expect(count(/ info  turn leased .* workerId=\S+ lease=\d+/)).toBe(3);
    expect(count(/ info  approval asked .* tool=bash$/)).toBe(3);
    expect(count(/ info  approval answered .* decision=approved by=/)).toBe(2);
    expect(count(/ warn  turn settled .* outcome=failed error=.*the key was refused.* durationMs=\d+$/)).toBe(1);
    expect(count(/ info  turn settled .* outcome=interrupted cause=\w+ durationMs=\d+$/)).toBe(1);
    expect(count(/ info  turn settled .* outcome=completed durationMs=\d+$/)).toBe(1);
    expect(count(/ info  api: request refused subject=\S+\.turn\.start code=not_found error=.*thr_nobody/)).toBe(1);
    expect(count(/ info  revert started threadId=thr_\w+ revertId=\S+ turns=1 by=/)).toBe(1);
    expect(count(/ info  revert done threadId=thr_\w+ revertId=\S+ files=\d+$/)).toBe(1);
    expect(count(/ info  worker joined workerId=doomed\d+ environment=other/)).toBe(1);
    expect(count(/ warn  worker lost workerId=doomed\d+ environment=other silentMs=\d+$/)).toBe(1);
  }, 90_000);

  it('as JSON: the same things, one object a line, with pino\'s level, time and msg', async () => {
    const output = await serveThreeTurns('json');
    const records = output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; time: number; msg: string; outcome?: string; durationMs?: number; threadId?: string });
    const named = (msg: string) => records.filter((record) => record.msg === msg);
    expect(named('worker joined')).toHaveLength(2);
    expect(named('worker lost')).toHaveLength(1);
    expect(named('api: request refused')).toMatchObject([{ code: 'not_found', level: 30 }]);
    expect(named('revert started')).toHaveLength(1);
    expect(named('revert done')).toHaveLength(1);
    expect(named('turn requested')).toHaveLength(3);
    expect(named('turn leased')).toHaveLength(3);
    expect(named('approval asked')).toHaveLength(3);
    expect(named('approval answered')).toHaveLength(2);
    expect(named('turn settled').map((record) => record.outcome).sort()).toEqual(['completed', 'failed', 'interrupted']);
    for (const record of named('turn settled')) expect(record.durationMs).toBeGreaterThanOrEqual(0);
    expect(named('turn settled').find((record) => record.outcome === 'failed')?.level).toBe(40);
    expect(records.every((record) => typeof record.time === 'number' && [20, 30, 40, 50].includes(record.level))).toBe(true);
  }, 90_000);
});
