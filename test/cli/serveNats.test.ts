import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, nkeys } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';
import { type RunningCli, expectOneLineFailure, runCli, startCli } from './runCli.ts';

/** A NATS server that is unreachable, malformed, too small, or wants credentials. */
describe('turnloom serve and its NATS server', () => {
  const dir = tempDir('turnloom-cli-nats-');
  const secret = `pw-${randomUUID()}`;
  let natsWithPassword: NatsServerHandle;
  beforeAll(async () => {
    natsWithPassword = await startNatsServer({ jetstream: false, config: `authorization {\n  users = [ { user: "engine", password: "${secret}" } ]\n}\n` });
  });
  afterAll(async () => {
    await natsWithPassword?.dispose();
    dir.remove();
  });
  const run = (args: string[], env: Record<string, string> = {}) => runCli(args, { cwd: dir.path, env });

  /** Starts serve, waits until it says where it serves, checks it answers over NATS as `engine`, then SIGTERM. */
  async function serveAndStop(serve: RunningCli, prefix: string): Promise<string> {
    await expect.poll(() => serve.output(), { timeout: 30_000 }).toContain('data:');
    const nc = await connect({ servers: natsWithPassword.url, user: 'engine', pass: secret });
    try {
      const reply = await nc.request(`${prefix}.v1.api.health`, '{}', { timeout: 5_000 });
      expect(JSON.parse(reply.string()).result.status).toBe('ok');
    } finally {
      await nc.close();
    }
    serve.child.kill('SIGTERM');
    const result = await serve.exited;
    expect(result.code, serve.output()).toBe(0);
    return serve.output();
  }

  describe('fails in one line, within the deadline', () => {
    it('an unreachable server (nothing listens)', async () => {
      expectOneLineFailure(await run(['serve', '--nats', 'nats://127.0.0.1:1']), /cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: .*refused/);
    });

    it('a malformed URL', async () => {
      expectOneLineFailure(await run(['serve', '--nats', 'ht!tp://::bad']), /--nats .*: not a URL; expected nats:\/\/HOST:PORT/);
    });

    it('a URL of another scheme', async () => {
      expectOneLineFailure(await run(['serve', '--nats', 'http://127.0.0.1:4222']), /unsupported scheme "http"/);
    });

    it('--max-payload above the server\'s own max_payload (and the connection does not keep the process up)', async () => {
      expectOneLineFailure(await run(['serve', '--nats', inject('natsUrl'), '--max-payload', String(64 * 1024 * 1024), '--data', 'too-big']), /--max-payload 67108864 is over the NATS server's max_payload of \d+ bytes/);
    });
  });

  describe('keeps credentials secret', () => {
    it('a password in the URL works, is shown as ***, and earns a warning about ps', async () => {
      const prefix = `url${process.pid}`;
      const url = `nats://engine:${secret}@127.0.0.1:${natsWithPassword.port}`;
      const serve = startCli(['serve', '--nats', url, '--prefix', prefix, '--data', 'url'], { cwd: dir.path, deadlineMs: null });
      const output = await serveAndStop(serve, prefix);
      expect(output).not.toContain(secret);
      expect(output).toContain(`serving on nats://engine:***@127.0.0.1:${natsWithPassword.port}`);
      expect(serve.stderr()).toMatch(/warning: the --nats URL holds a password, which other users of this machine can read with ps; set TURNLOOM_NATS_PASS/);
    });

    it('TURNLOOM_NATS_PASS with --nats-user works, without the warning', async () => {
      const prefix = `env${process.pid}`;
      const serve = startCli(['serve', '--nats', natsWithPassword.url, '--nats-user', 'engine', '--prefix', prefix, '--data', 'env'], {
        cwd: dir.path,
        env: { TURNLOOM_NATS_PASS: secret },
        deadlineMs: null,
      });
      const output = await serveAndStop(serve, prefix);
      expect(output).not.toContain(secret);
      expect(output).toContain(`serving on ${natsWithPassword.url}`);
      expect(output).not.toMatch(/holds a password/);
    });

    it('TURNLOOM_NATS_USER and TURNLOOM_NATS_PASS from the environment alone work', async () => {
      const prefix = `envuser${process.pid}`;
      const serve = startCli(['serve', '--nats', natsWithPassword.url, '--prefix', prefix, '--data', 'envuser'], {
        cwd: dir.path,
        env: { TURNLOOM_NATS_USER: 'engine', TURNLOOM_NATS_PASS: secret },
        deadlineMs: null,
      });
      expect(await serveAndStop(serve, prefix)).not.toContain(secret);
    });

    it('a wrong password fails in one line that does not show it', async () => {
      const wrong = `wrong-${randomUUID()}`;
      const inUrl = expectOneLineFailure(await run(['serve', '--nats', `nats://engine:${wrong}@127.0.0.1:${natsWithPassword.port}`]), /Authorization Violation/);
      expect(inUrl).toContain('nats://engine:***@');
      expect(inUrl).not.toContain(wrong);
      const fromEnv = expectOneLineFailure(await run(['serve', '--nats', natsWithPassword.url, '--nats-user', 'engine'], { TURNLOOM_NATS_PASS: wrong }), /Authorization Violation/);
      expect(fromEnv).not.toContain(wrong);
    });

    it('TURNLOOM_NATS_PASS without a user name is refused in one line', async () => {
      const line = expectOneLineFailure(await run(['serve', '--nats', natsWithPassword.url], { TURNLOOM_NATS_PASS: secret }), /TURNLOOM_NATS_PASS is set but no user name/);
      expect(line).not.toContain(secret);
    });

    it('--nats-creds: a missing or malformed file fails in one line; a well-formed one is read and sent', async () => {
      expectOneLineFailure(await run(['serve', '--nats', natsWithPassword.url, '--nats-creds', join(dir.path, 'nope.creds')]), /--nats-creds .*nope\.creds: no such file/);
      writeFileSync(join(dir.path, 'garbage.creds'), 'not a credentials file\n');
      expectOneLineFailure(await run(['serve', '--nats', natsWithPassword.url, '--nats-creds', join(dir.path, 'garbage.creds')]), /--nats-creds .*garbage\.creds: not a NATS credentials file/);
      // A real login needs an operator/JWT server; this one only knows user/password, so a well-formed file
      // (a made-up JWT, a real user seed) gets as far as the server, which refuses it.
      const seed = new TextDecoder().decode(nkeys.createUser().getSeed());
      writeFileSync(
        join(dir.path, 'user.creds'),
        `-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
      );
      const line = expectOneLineFailure(await run(['serve', '--nats', natsWithPassword.url, '--nats-creds', join(dir.path, 'user.creds')]), /cannot connect to NATS .*Authorization Violation/);
      expect(line).not.toContain(seed);
    });
  });
});
