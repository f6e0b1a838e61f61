import { type ConnectionOptions, credsAuthenticator } from '@nats-io/transport-node';
import { subjects } from '../bus/index.ts';
import { NatsBus } from '../bus/natsBus.ts';
import { TurnloomError, type Logger } from '../domain/index.ts';
import { UsageError, readUserFile } from './cliErrors.ts';
import { redact, registerSecret } from './redact.ts';

/** How `turnloom serve` reaches NATS, checked and with its secrets registered for redaction. */
export interface NatsSettings {
  /** Server URLs without credentials, as nats.js takes them. */
  servers: string[];
  /** The URL(s) to print: credentials replaced by `***`. */
  display: string;
  /** user/pass, token or authenticator for `connect()`. */
  auth: Pick<ConnectionOptions, 'user' | 'pass' | 'token' | 'authenticator'>;
  /** One-line warnings to print before serving. */
  warnings: string[];
}

export interface NatsCredentialInputs {
  /** `--nats-user`. */
  user?: string | undefined;
  /** `--nats-creds FILE`. */
  credsFile?: string | undefined;
  /** TURNLOOM_NATS_USER, TURNLOOM_NATS_PASS, TURNLOOM_NATS_TOKEN. */
  env: NodeJS.ProcessEnv;
}

export const NATS_CONNECT_TIMEOUT_MS = 5_000;

interface ParsedServer {
  server: string;
  user: string | undefined;
  pass: string | undefined;
  token: string | undefined;
}

function parseServer(raw: string): ParsedServer {
  const text = raw.trim();
  const bad = (why: string) => new UsageError(`--nats ${redact(text || '""')}: ${why}; expected nats://HOST:PORT (several separated by commas)`);
  if (!text) throw bad('empty server URL');
  let url: URL;
  try {
    url = new URL(text.includes('://') ? text : `nats://${text}`);
  } catch {
    throw bad('not a URL');
  }
  if (url.protocol !== 'nats:' && url.protocol !== 'tls:') throw bad(`unsupported scheme "${url.protocol.slice(0, -1)}"`);
  if (!url.hostname) throw bad('no host');
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) throw bad('a NATS URL has no path or query');
  let user: string | undefined;
  let pass: string | undefined;
  let token: string | undefined;
  try {
    const name = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    // `nats://user:pass@host` carries a user and password; `nats://token@host` a token (as the NATS tools read it).
    if (url.password) [user, pass] = [name, password];
    else if (url.username) token = name;
  } catch {
    throw bad('the credentials in it are not valid percent-encoding');
  }
  registerSecret(pass);
  registerSecret(token);
  return { server: `${url.protocol}//${url.host}`, user, pass, token };
}

/** Reads and checks a NATS credentials file (user JWT + NKEY seed, as `nsc` writes it). */
function credsFromFile(path: string): NonNullable<ConnectionOptions['authenticator']> {
  const text = readUserFile('--nats-creds', path);
  for (const seed of text.match(/\bS[A-Z][A-Z2-7]{40,}\b/g) ?? []) registerSecret(seed);
  const bytes = new TextEncoder().encode(text);
  const authenticator = credsAuthenticator(bytes);
  try {
    // The authenticator parses lazily, at connect time; parse and sign once now so a bad file fails here, in one line.
    authenticator('turnloom-probe');
  } catch {
    throw new UsageError(`--nats-creds ${path}: not a NATS credentials file (expected a user JWT block and a user NKEY seed block, as nsc writes them)`);
  }
  return authenticator;
}

/**
 * Checks `--nats` and works out the credentials: from the environment
 * (TURNLOOM_NATS_USER or --nats-user, TURNLOOM_NATS_PASS, TURNLOOM_NATS_TOKEN),
 * a credentials file (--nats-creds), or the URL itself (which still works, but
 * shows in `ps`, so it earns a warning). Only one source at a time.
 */
export function natsSettings(urls: string, inputs: NatsCredentialInputs): NatsSettings {
  const { env } = inputs;
  const envPass = env.TURNLOOM_NATS_PASS || undefined;
  const envToken = env.TURNLOOM_NATS_TOKEN || undefined;
  registerSecret(envPass);
  registerSecret(envToken);
  const parsed = urls.split(',').map(parseServer);
  const display = parsed.map(({ server, user, pass, token }) => server.replace('://', `://${pass !== undefined ? `${user}:***@` : token !== undefined ? '***@' : ''}`)).join(',');
  const withCredentials = parsed.filter((server) => server.pass !== undefined || server.token !== undefined);
  const user = inputs.user || env.TURNLOOM_NATS_USER || undefined;
  const warnings: string[] = [];

  const sources = [
    withCredentials.length > 0 && 'credentials in the --nats URL',
    envPass && 'TURNLOOM_NATS_PASS',
    envToken && 'TURNLOOM_NATS_TOKEN',
    inputs.credsFile && '--nats-creds',
  ].filter((source): source is string => Boolean(source));
  if (sources.length > 1) throw new UsageError(`serve: ${sources.join(' and ')} are two ways to log in to NATS; use one`);

  if (withCredentials.length > 0) {
    const first = withCredentials[0]!;
    if (withCredentials.some((server) => server.user !== first.user || server.pass !== first.pass || server.token !== first.token)) {
      throw new UsageError('serve: the --nats URLs hold different credentials; give them once, in TURNLOOM_NATS_USER/TURNLOOM_NATS_PASS or TURNLOOM_NATS_TOKEN');
    }
    if (inputs.user) throw new UsageError('serve: --nats-user and a user in the --nats URL; give the user once');
    warnings.push(
      `warning: the --nats URL holds a ${first.pass !== undefined ? 'password' : 'token'}, which other users of this machine can read with ps; set ${first.pass !== undefined ? 'TURNLOOM_NATS_PASS (and --nats-user)' : 'TURNLOOM_NATS_TOKEN'} instead`,
    );
    const auth = first.pass !== undefined ? { user: first.user!, pass: first.pass } : { token: first.token! };
    return { servers: parsed.map(({ server }) => server), display, auth, warnings };
  }

  let auth: NatsSettings['auth'] = {};
  if (envPass) {
    if (!user) throw new UsageError('serve: TURNLOOM_NATS_PASS is set but no user name; pass --nats-user USER or set TURNLOOM_NATS_USER');
    auth = { user, pass: envPass };
  } else if (envToken) {
    if (user) throw new UsageError('serve: TURNLOOM_NATS_TOKEN and a user name (--nats-user or TURNLOOM_NATS_USER) do not go together; a token logs in alone');
    auth = { token: envToken };
  } else if (inputs.credsFile) {
    if (user) throw new UsageError('serve: --nats-creds and a user name (--nats-user or TURNLOOM_NATS_USER) do not go together; the credentials file names the user');
    auth = { authenticator: credsFromFile(inputs.credsFile) };
  } else if (user) {
    auth = { user };
  }
  return { servers: parsed.map(({ server }) => server), display, auth, warnings };
}

function describeConnectError(error: unknown): string {
  const { name, message, cause } = error as { name?: string; message?: string; cause?: { message?: string } };
  const text = [message, cause?.message && cause.message !== message ? `(${cause.message})` : ''].filter(Boolean).join(' ');
  if (name === 'AuthorizationError' || /authori[sz]ation|authentication/i.test(text)) {
    return `${text}; check the user name and TURNLOOM_NATS_PASS, TURNLOOM_NATS_TOKEN or --nats-creds`;
  }
  return `${text || String(error)}; is nats-server running there, and is the URL right?`;
}

/**
 * Connects once: nats.js fails the first connect at once instead of retrying
 * (the bus does not set `waitOnFirstConnect`), and gives up after
 * `NATS_CONNECT_TIMEOUT_MS` on a host that does not answer. Reconnects
 * forever only after a first successful connect.
 */
export async function connectNats(settings: NatsSettings, name: string, inboxPrefix?: string, log?: Logger): Promise<NatsBus> {
  try {
    return await NatsBus.connect({ servers: settings.servers, name, timeout: NATS_CONNECT_TIMEOUT_MS, waitOnFirstConnect: false, ...settings.auth, ...(inboxPrefix ? { inboxPrefix } : {}) }, log);
  } catch (error) {
    throw new TurnloomError('unavailable', `cannot connect to NATS at ${settings.display}: ${describeConnectError(error)}`);
  }
}

/** Flags that would put a secret on the command line, where every user sees it in `ps`. */
const refusedFlags: Record<string, string> = {
  '--nats-pass': 'TURNLOOM_NATS_PASS (with --nats-user USER or TURNLOOM_NATS_USER)',
  '--nats-token': 'TURNLOOM_NATS_TOKEN',
  '--token': 'TURNLOOM_TOKEN (the API token)',
};

export function refuseSecretFlags(command: string, args: string[]): void {
  for (const [index, arg] of args.entries()) {
    if (arg === '--') return;
    const flag = arg.split('=')[0]!;
    const instead = refusedFlags[flag];
    if (!instead) continue;
    // Its value is a secret: keep it out of anything printed from here on.
    registerSecret(arg.includes('=') ? arg.slice(flag.length + 1) : args[index + 1]);
    throw new UsageError(`${command}: ${flag} is not accepted (other users can read arguments with ps); set ${instead} in the environment instead`);
  }
}

/** The subject prefix, checked as the bus checks it, with a one-line error a user can act on. */
export function checkPrefix(command: string, prefix: string): string {
  try {
    subjects(prefix);
  } catch (error) {
    if (!(error instanceof TurnloomError)) throw error;
    throw new UsageError(`${command}: --prefix "${prefix}" is not a subject prefix: use letters, digits, "_" and "-", in tokens separated by dots`);
  }
  return prefix;
}

/** `--inbox-prefix`: the one a NATS user's permissions let it read, such as `_INBOX_worker`. */
export function checkInboxPrefix(command: string, prefix: string | undefined): string | undefined {
  if (prefix !== undefined && !/^_INBOX[A-Za-z0-9_-]*$/.test(prefix)) {
    throw new UsageError(`${command}: --inbox-prefix "${prefix}" must start with _INBOX and be one subject token (letters, digits, "_", "-")`);
  }
  return prefix;
}

/** The options every command that connects to NATS takes (secrets never among them: those come from the environment). */
export const natsArgOptions = {
  help: { type: 'boolean', short: 'h', default: false },
  nats: { type: 'string' },
  'nats-user': { type: 'string' },
  'nats-creds': { type: 'string' },
  'inbox-prefix': { type: 'string' },
} as const;
