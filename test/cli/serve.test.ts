import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { expectOneLineFailure, runCli, startCli } from './runCli.ts';

describe('the turnloom command', () => {
  const dir = tempDir('turnloom-cli-');
  afterAll(() => dir.remove());

  it('demo: the seed scenario fixes a real race on a scratch repository, and shows the approvals, the tool runs and the diff', async () => {
    const demo = await runCli(['demo'], { cwd: dir.path, deadlineMs: 90_000 });
    const output = demo.stdout + demo.stderr;
    expect(demo.code, output).toBe(0);
    // Its data is turnloom's own, under the XDG data home: nowhere near the folder it was started in.
    expect(output).toContain(`data in ${process.env.XDG_DATA_HOME}/turnloom/demo`);
    // The first test run fails on the race, the edit lands, the second run passes.
    expect(output).toMatch(/allowed bash node --test[\s\S]*✗ bash node --test .*exit code 1[\s\S]*✓ edit src\/session\.js[\s\S]*✓ bash node --test/);
    expect(output).toContain('turn completed');
    // Side work after the turn, by the scripted provider: a title from the prompt, a summary from the diff.
    expect(output).toContain('title: Fix the login race and run the tests\n');
    expect(output).toContain('summary: Changed src/session.js (+13 −5)\n');
    expect(output).toMatch(/modified +src\/session\.js/);
    expect(output).toContain('+const pending = new Map();');
  }, 90_000);

  it('demo --json: the turn, its approvals and tool calls, and the files its checkpoint holds', async () => {
    const demo = await runCli(['demo', '--json', '--data', 'json-demo'], { cwd: dir.path, deadlineMs: 90_000 });
    expect(demo.code, demo.stdout + demo.stderr).toBe(0);
    const report = JSON.parse(demo.stdout);
    expect(report.status).toBe('completed');
    expect(report.approvals.map((approval: { subject: string; state: string }) => [approval.subject, approval.state])).toEqual([
      ['node --test', 'consumed'],
      ['node --test', 'consumed'],
    ]);
    expect(report.toolCalls.map((call: { name: string; state: string }) => [call.name, call.state])).toEqual([
      ['read', 'completed'],
      ['read', 'completed'],
      ['bash', 'error'],
      ['edit', 'completed'],
      ['bash', 'completed'],
    ]);
    expect(report.checkpoint.files).toEqual([{ path: 'src/session.js', status: 'modified', additions: 13, deletions: 5 }]);
    expect(report.title).toBe('Fix the login race and run the tests');
    expect(report.checkpoint.summary).toBe('Changed src/session.js (+13 −5)');
    expect(report.events).toBeGreaterThan(20);
  }, 90_000);

  it('demo --deny: both test runs are refused, and the model reads why', async () => {
    const demo = await runCli(['demo', '--json', '--deny', '--data', 'deny-demo'], { cwd: dir.path, deadlineMs: 90_000 });
    const report = JSON.parse(demo.stdout);
    expect(report.approvals.every((approval: { state: string }) => approval.state === 'consumed' || approval.state === 'denied')).toBe(true);
    const runs = report.toolCalls.filter((call: { name: string }) => call.name === 'bash');
    expect(runs.every((call: { state: string; error: string }) => call.state === 'error' && call.error.includes('nobody was there to approve it'))).toBe(true);
  }, 90_000);

  it('serve: prints where it listens, answers over NATS, and stops cleanly on SIGTERM', async () => {
    const prefix = `cli${process.pid}`;
    const serve = startCli(['serve', '--nats', inject('natsUrl'), '--prefix', prefix, '--data', 'served'], { cwd: dir.path, deadlineMs: null });
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
    expect(serve.output()).toContain(`serving on ${inject('natsUrl')}`);
    expect(serve.output()).toContain(`${dir.path}/served`);
    const nc = await connect({ servers: inject('natsUrl') });
    const reply = await nc.request(`${prefix}.v1.api.thread.create`, '{"title":"via serve"}', { timeout: 5_000 });
    expect(JSON.parse(reply.string()).result.threadId).toMatch(/^thr_/);
    await nc.close();
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
    expect(serve.output()).toContain('stopped');
  }, 60_000);

  it('serve with a key set and the scripted provider chosen says so, not that no key is set', async () => {
    const serve = startCli(['serve', '--data', 'chosen'], { cwd: dir.path, deadlineMs: null, env: { OPENAI_API_KEY: 'sk-test-not-used', TURNLOOM_PROVIDER: 'scripted' } });
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('the scripted provider answers');
    expect(serve.output()).not.toContain('no OPENAI_API_KEY');
    expect(serve.output()).toMatch(/the default provider \(openai[^)]*also configured\): the scripted provider answers/);
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
  }, 60_000);

  it('serve on the in-process bus stays up until SIGTERM, then stops cleanly', async () => {
    const serve = startCli(['serve', '--data', 'in-process'], { cwd: dir.path, deadlineMs: null });
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
    // No key and no script: it says what its turns will do, and how to script them.
    expect(serve.output()).toContain('the scripted provider answers, listing the workspace each turn (--script FILE');
    // It used to return at once (exit 13, "unsettled top-level await"): nothing held the event loop.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(serve.child.exitCode, serve.output()).toBeNull();
    serve.child.kill('SIGTERM');
    const result = await serve.exited;
    expect(result.code, serve.output()).toBe(0);
    expect(result.stdout).toContain('stopped');
    // Standard error carries the log alone (JSON, as it is not a terminal), and nothing in it is a warning or an error.
    for (const line of result.stderr.split('\n').filter(Boolean)) expect((JSON.parse(line) as { level: number }).level, line).toBeLessThanOrEqual(30);
  }, 60_000);

  it('a second serve on a data folder in use fails in one line, and its NATS connection does not keep it up', async () => {
    const first = startCli(['serve', '--data', 'shared'], { cwd: dir.path, deadlineMs: null });
    try {
      await expect.poll(() => first.output(), { timeout: 30_000 }).toContain('data:');
      // The folder lock is the store's (adapters/lmdbStore.ts); the CLI opens the store before connecting.
      expectOneLineFailure(await runCli(['serve', '--data', 'shared', '--nats', inject('natsUrl')], { cwd: dir.path }), /shared/);
    } finally {
      first.child.kill('SIGTERM');
      expect((await first.exited).code, first.output()).toBe(0);
    }
  }, 90_000);
});
