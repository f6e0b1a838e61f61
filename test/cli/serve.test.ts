import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';

const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));

function run(args: string[], cwd: string) {
  const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe('the turnloom command', () => {
  const dir = tempDir('turnloom-cli-');
  afterAll(() => dir.remove());

  it('demo: runs one turn end to end on the embedded defaults', async () => {
    const demo = run(['demo', '--prompt', 'say hello'], dir.path);
    expect(await demo.exited).toBe(0);
    expect(demo.output()).toContain('approval requested: list_files');
    expect(demo.output()).toMatch(/turn completed; 2 model calls/);
    expect(demo.output()).toContain(`data in ${dir.path}/.turnloom/demo`);
  }, 60_000);

  it('serve: prints where it listens, answers over NATS, and stops cleanly on SIGTERM', async () => {
    const prefix = `cli${process.pid}`;
    const serve = run(['serve', '--nats', inject('natsUrl'), '--prefix', prefix, '--data', 'served'], dir.path);
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
    expect(serve.output()).toContain(`serving on ${inject('natsUrl')}`);
    expect(serve.output()).toContain(`${dir.path}/served`);
    const nc = await connect({ servers: inject('natsUrl') });
    const reply = await nc.request(`${prefix}.v1.api.thread.create`, '{"title":"via serve"}', { timeout: 5_000 });
    expect(JSON.parse(reply.string()).result.threadId).toMatch(/^thr_/);
    await nc.close();
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(serve.output()).toContain('stopped');
  }, 60_000);

  it('prints a one-line error for bad options', async () => {
    const bad = run(['serve', '--auth', '/nonexistent/auth.json'], dir.path);
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toMatch(/no such file|ENOENT/);
  });
});
