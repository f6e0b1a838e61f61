import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { expectOneLineFailure, runCli, startCli } from './runCli.ts';

describe('the turnloom command', () => {
  const dir = tempDir('turnloom-cli-');
  afterAll(() => dir.remove());

  it('demo: runs one turn end to end on the embedded defaults', async () => {
    const demo = await runCli(['demo', '--prompt', 'say hello'], { cwd: dir.path, deadlineMs: 60_000 });
    const output = demo.stdout + demo.stderr;
    expect(demo.code, output).toBe(0);
    expect(output).toContain('approval requested: list_files');
    expect(output).toMatch(/turn completed; 2 model calls/);
    expect(output).toContain(`data in ${dir.path}/.turnloom/demo`);
  }, 60_000);

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

  it('serve on the in-process bus stays up until SIGTERM, then stops cleanly', async () => {
    const serve = startCli(['serve', '--data', 'in-process'], { cwd: dir.path, deadlineMs: null });
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
    // It used to return at once (exit 13, "unsettled top-level await"): nothing held the event loop.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(serve.child.exitCode, serve.output()).toBeNull();
    serve.child.kill('SIGTERM');
    const result = await serve.exited;
    expect(result.code, serve.output()).toBe(0);
    expect(result.stdout).toContain('stopped');
    expect(result.stderr).toBe('');
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
