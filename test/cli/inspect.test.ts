import { createServer } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { openRelayPage } from '../support/relayPage.ts';
import { openSse } from '../support/sseClient.ts';
import { expectOneLineFailure, runCli, startCli } from './runCli.ts';

/** A port something else already listens on. */
async function takenPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { port, release: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The page's address as printed: with its key, which a browser trades for the page's cookie. */
const urlIn = (output: string) => /http:\/\/127\.0\.0\.1:\d+\/\?key=[A-Za-z0-9_-]+/.exec(output)?.[0];

describe('turnloom inspect and serve --inspect', () => {
  const dir = tempDir('turnloom-cli-inspect-');
  afterAll(() => dir.remove());
  const run = (args: string[]) => runCli(args, { cwd: dir.path });

  it('bad options are one line each, and the token never goes on the command line', async () => {
    expectOneLineFailure(await run(['inspect', '--port', 'abc', '--nats', inject('natsUrl')]), /--port must be a whole number/);
    expectOneLineFailure(await run(['inspect', '--port', '70000']), /--port must be at most 65535/);
    expectOneLineFailure(await run(['inspect', '--prefix', 'a b']), /--prefix "a b"/);
    expectOneLineFailure(await run(['serve', '--inspect', '-3']), /--inspect/);
    const token = expectOneLineFailure(await run(['inspect', '--token', 'hunter2-token']), /--token.*TURNLOOM_TOKEN/);
    expect(token).not.toContain('hunter2-token');
    expectOneLineFailure(await run(['inspect', '--nats', 'nats://127.0.0.1:1', '--port', '0']), /cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);
  });

  it('a port already taken is one line, and nothing stays open', async () => {
    const taken = await takenPort();
    try {
      expectOneLineFailure(await run(['inspect', '--nats', inject('natsUrl'), '--port', String(taken.port)]), new RegExp(`--port ${taken.port}: port ${taken.port} on 127.0.0.1 is taken; choose another`));
      // Each command names its own option.
      const serve = await run(['serve', '--data', 'taken', '--inspect', String(taken.port), '--no-worker']);
      expectOneLineFailure(serve, new RegExp(`--inspect ${taken.port}: port ${taken.port} on 127.0.0.1 is taken; choose another`));
      expect(serve.stderr).not.toContain('--port');
      // The folder was given back: a serve on it starts.
      const again = startCli(['serve', '--data', 'taken', '--no-worker'], { cwd: dir.path, deadlineMs: null });
      await expect.poll(() => again.output(), { timeout: 30_000 }).toContain('data:');
      again.child.kill('SIGTERM');
      expect((await again.exited).code, again.output()).toBe(0);
    } finally {
      await taken.release();
    }
  }, 90_000);

  it('inspect serves the page for an engine on NATS, follows a thread, and stops cleanly on SIGINT', async () => {
    const prefix = `insp${process.pid}`;
    const serve = startCli(['serve', '--nats', inject('natsUrl'), '--prefix', prefix, '--data', 'engine', '--no-worker'], { cwd: dir.path, deadlineMs: null });
    let inspect: ReturnType<typeof startCli> | undefined;
    try {
      await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
      inspect = startCli(['inspect', '--nats', inject('natsUrl'), '--prefix', prefix, '--port', '0'], { cwd: dir.path, deadlineMs: null });
      await expect.poll(() => urlIn(inspect!.output()), { timeout: 30_000 }).toBeDefined();
      const page = await openRelayPage(urlIn(inspect.output())!);
      const url = page.base;
      // Without the key nothing is lent the relay's token; with it, the page and its calls work.
      expect((await fetch(`${url}api/thread.list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
      expect((await page.fetch('')).status).toBe(200);
      const created = await page.fetch('api/thread.list', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(((await created.json()) as { result: { threads: unknown[] } }).result.threads).toEqual([]);
      // The engine's API is reached through the relay; a thread made over NATS shows up in its stream.
      const { connect } = await import('@nats-io/transport-node');
      const nc = await connect({ servers: inject('natsUrl') });
      const reply = await nc.request(`${prefix}.v1.api.thread.create`, '{"title":"seen by the inspector"}', { timeout: 5_000 });
      const { threadId } = JSON.parse(reply.string()).result as { threadId: string };
      await nc.close();
      const sse = await openSse(`${url}stream/threads/${threadId}?after=0`, { cookie: page.cookie });
      await expect.poll(() => sse.messages.map((message) => message.event), { timeout: 10_000 }).toContain('caughtUp');
      expect(sse.messages.find((message) => message.event === 'event')!.data).toMatchObject({ threadSeq: 1, event: { type: 'thread.created', title: 'seen by the inspector' } });
      sse.close();
      inspect.child.kill('SIGINT');
      const result = await inspect.exited;
      expect(result.code, inspect.output()).toBe(0);
      expect(result.stderr).toBe('');
    } finally {
      inspect?.child.kill('SIGKILL');
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
  }, 90_000);

  it('serve --inspect shows the page of the embedded engine and closes it with the engine', async () => {
    const serve = startCli(['serve', '--data', 'embedded', '--inspect', '0', '--no-worker'], { cwd: dir.path, deadlineMs: null });
    await expect.poll(() => urlIn(serve.output()), { timeout: 30_000 }).toBeDefined();
    const printed = urlIn(serve.output())!;
    expect(serve.output()).toContain(`inspector: ${printed}\n`);
    const page = await openRelayPage(printed);
    const url = page.base;
    expect((await fetch(`${url}threads/thr_x`)).status).toBe(401);
    expect((await page.fetch('threads/thr_x')).status).toBe(200);
    const health = (await (await page.fetch('api/health', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as { result: { status: string } };
    expect(health.result.status).toBe('ok');
    serve.child.kill('SIGTERM');
    expect((await serve.exited).code, serve.output()).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  }, 60_000);
});
