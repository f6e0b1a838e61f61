import { afterAll, describe, expect, inject, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';
import { expectOneLineFailure, runCli } from './runCli.ts';

/**
 * Mistakes on the command line itself: each is one line on stderr, a
 * non-zero exit, and the process ends by itself (nothing opened before the
 * mistake is found keeps it alive).
 */
describe('turnloom with bad options', () => {
  const dir = tempDir('turnloom-cli-options-');
  afterAll(() => dir.remove());
  const run = (args: string[]) => runCli(args, { cwd: dir.path });

  const cases: Array<{ name: string; args: () => string[]; says: RegExp }> = [
    { name: 'an unknown option', args: () => ['serve', '--bogus'], says: /unknown option --bogus.*turnloom serve --help/ },
    { name: 'an unknown option (demo)', args: () => ['demo', '--nope'], says: /demo: unknown option --nope/ },
    { name: 'an unknown option (charts)', args: () => ['charts', '--bogus'], says: /charts: unknown option --bogus/ },
    { name: 'a missing value (--nats)', args: () => ['serve', '--nats'], says: /--nats needs a value/ },
    { name: 'a missing value (--prompt)', args: () => ['demo', '--prompt'], says: /--prompt needs a value/ },
    { name: 'an option where a value should be', args: () => ['demo', '--prompt', '--deny'], says: /--prompt needs a value.*--prompt=VALUE/ },
    { name: 'a stray argument', args: () => ['serve', 'extra'], says: /unexpected argument "extra"/ },
    { name: 'an unknown command', args: () => ['frob'], says: /unknown command "frob".*turnloom --help/ },
    { name: '--max-payload that is not a number', args: () => ['serve', '--max-payload', 'abc'], says: /--max-payload must be a whole number of bytes, not "abc"/ },
    { name: '--max-payload below what health needs', args: () => ['serve', '--max-payload', '100'], says: /--max-payload must be at least 8192 bytes/ },
    { name: '--approval-timeout of zero', args: () => ['serve', '--approval-timeout=0'], says: /--approval-timeout must be a positive number/ },
    { name: 'a prefix that is not a subject token', args: () => ['serve', '--prefix', 'a b'], says: /--prefix "a b" is not a subject prefix/ },
    // These two hung: the NATS connection was open before the mistake was found.
    { name: 'a bad prefix with --nats', args: () => ['serve', '--prefix', 'a b', '--nats', inject('natsUrl'), '--data', 'unused'], says: /--prefix "a b"/ },
    { name: 'a bad prefix with a dot at the end', args: () => ['serve', '--prefix', 'turnloom.', '--nats', inject('natsUrl')], says: /--prefix "turnloom\."/ },
    { name: '--nats-user without --nats', args: () => ['serve', '--nats-user', 'engine'], says: /--nats-user needs --nats URL/ },
    { name: '--context-window that is not a number (serve)', args: () => ['serve', '--context-window', '128k'], says: /serve: --context-window must be a whole number of tokens, not "128k"/ },
    { name: '--context-window too small (run)', args: () => ['run', 'hello', '--context-window', '12'], says: /run: --context-window must be at least 1000 tokens, not 12/ },
    { name: '--timeout that is not a number (run)', args: () => ['run', 'hello', '--timeout', 'abc'], says: /run: --timeout must be a positive number, not "abc"/ },
    { name: '--timeout below zero (run)', args: () => ['run', 'hello', '--timeout=-1'], says: /run: --timeout must be a positive number, not "-1"/ },
    { name: 'run - with nothing on standard input', args: () => ['run', '-'], says: /run: the prompt read from standard input \(run -\) is empty/ },
    { name: '--context-window that is not a number (worker)', args: () => ['worker', '--nats', inject('natsUrl'), '--workspace', '.', '--context-window=lots'], says: /worker: --context-window must be a whole number of tokens/ },
  ];

  for (const { name, args, says } of cases) {
    it(`${name}: one line, non-zero exit`, async () => {
      expectOneLineFailure(await run(args()), says);
    });
  }

  it('refuses --nats-pass and --nats-token, pointing at the environment, without echoing the secret', async () => {
    const pass = expectOneLineFailure(await run(['serve', '--nats', inject('natsUrl'), '--nats-user', 'engine', '--nats-pass', 'hunter2-secret']), /--nats-pass.*TURNLOOM_NATS_PASS/);
    expect(pass).not.toContain('hunter2-secret');
    const token = expectOneLineFailure(await run(['serve', '--nats-token=hunter2-secret']), /--nats-token.*TURNLOOM_NATS_TOKEN/);
    expect(token).not.toContain('hunter2-secret');
  });

  it('--help prints the usage on stdout and exits 0, for the tool and each command', async () => {
    for (const args of [['--help'], ['serve', '--help'], ['demo', '--help'], ['replay', '--help']]) {
      const result = await run(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/^turnloom /);
    }
    expect((await run(['serve', '--help'])).stdout).toContain('TURNLOOM_NATS_PASS');
  });
});
