import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../cli/cliErrors.ts';
import { natsSettings } from '../../cli/natsOptions.ts';
import { clearSecrets, redact, registerSecret } from '../../cli/redact.ts';

describe('redact', () => {
  afterEach(() => clearSecrets());

  it('hides the password of any URL, and a token given as the user part', () => {
    expect(redact('serving on nats://engine:hunter2@host:4222')).toBe('serving on nats://engine:***@host:4222');
    expect(redact('tls://engine:p%40ss@host:4222, nats://tok-123@other:4222')).toBe('tls://engine:***@host:4222, nats://***@other:4222');
    // An unencoded "@" in the password: everything up to the last "@" is userinfo, as URL parsers read it.
    expect(redact('nats://engine:p@ss@host:4222/')).toBe('nats://engine:***@host:4222/');
    expect(redact('nats://host:4222 and https://example.com/a@b')).toBe('nats://host:4222 and https://example.com/a@b');
  });

  it('replaces every registered secret, also in its URL-encoded form', () => {
    registerSecret('s3cr3t/value');
    expect(redact('error: bad password s3cr3t/value (s3cr3t%2Fvalue)')).toBe('error: bad password *** (***)');
    registerSecret('ab'); // too short to hide as a substring without wrecking every line
    expect(redact('abc')).toBe('abc');
  });
});

describe('natsSettings', () => {
  afterEach(() => clearSecrets());
  const env = {};

  it('takes the password out of the URL, shows it as ***, registers it and warns', () => {
    const settings = natsSettings('nats://engine:hunter22@127.0.0.1:4333', { env });
    expect(settings.servers).toEqual(['nats://127.0.0.1:4333']);
    expect(settings.display).toBe('nats://engine:***@127.0.0.1:4333');
    expect(settings.auth).toEqual({ user: 'engine', pass: 'hunter22' });
    expect(settings.warnings).toHaveLength(1);
    expect(settings.warnings[0]).toMatch(/ps; set TURNLOOM_NATS_PASS/);
    expect(redact('Authorization Violation for hunter22')).toBe('Authorization Violation for ***');
  });

  it('reads a token from the URL user part, percent-decoded', () => {
    const settings = natsSettings('nats://t%40ken-1234@host', { env });
    expect(settings.auth).toEqual({ token: 't@ken-1234' });
    expect(settings.display).toBe('nats://***@host');
  });

  it('takes credentials from the environment', () => {
    expect(natsSettings('127.0.0.1:4333', { env: { TURNLOOM_NATS_USER: 'engine', TURNLOOM_NATS_PASS: 'from-env' } })).toMatchObject({
      servers: ['nats://127.0.0.1:4333'],
      auth: { user: 'engine', pass: 'from-env' },
      warnings: [],
    });
    expect(natsSettings('nats://h:1', { user: 'flag-user', env: { TURNLOOM_NATS_USER: 'env-user', TURNLOOM_NATS_PASS: 'from-env' } }).auth).toEqual({ user: 'flag-user', pass: 'from-env' });
    expect(natsSettings('nats://h:1', { env: { TURNLOOM_NATS_TOKEN: 'tok-from-env' } }).auth).toEqual({ token: 'tok-from-env' });
    expect(natsSettings('nats://a:1,nats://b:2', { env }).servers).toEqual(['nats://a:1', 'nats://b:2']);
  });

  it('refuses two ways to log in, a password without a user, and malformed URLs', () => {
    const refused = (urls: string, inputs: Parameters<typeof natsSettings>[1]) => {
      try {
        natsSettings(urls, inputs);
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refused('nats://engine:pw-1234@h:1', { env: { TURNLOOM_NATS_PASS: 'other' } })).toMatch(/two ways to log in/);
    expect(refused('nats://h:1', { env: { TURNLOOM_NATS_PASS: 'p', TURNLOOM_NATS_TOKEN: 't' } })).toMatch(/two ways to log in/);
    expect(refused('nats://h:1', { env: { TURNLOOM_NATS_PASS: 'pw-1234' } })).toMatch(/no user name/);
    expect(refused('nats://h:1', { user: 'engine', env: { TURNLOOM_NATS_TOKEN: 'tok-1234' } })).toMatch(/a token logs in alone/);
    expect(refused('ht!tp://::bad', { env })).toMatch(/not a URL/);
    expect(refused('nats://engine:pw-1234@h:1/path', { env })).toBe('--nats nats://engine:***@h:1/path: a NATS URL has no path or query; expected nats://HOST:PORT (several separated by commas)');
    expect(refused('nats://a:1,', { env })).toMatch(/empty server URL/);
  });
});
