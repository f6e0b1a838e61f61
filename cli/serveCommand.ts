import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LmdbStore } from '../adapters/lmdbStore.ts';
import { type Bus, InProcessHub, NatsBus } from '../bus/index.ts';
import { authConfigSchema } from '../services/api/index.ts';
import { VERSION, startTurnloomServer } from '../services/turnloomServer.ts';
import { providersFromEnvironment } from './providerRegistry.ts';

export const serveUsage = `turnloom serve [options]
  --nats URL          serve on this NATS server (default: the in-process bus, reachable only from this process)
  --nats-user USER    NATS user name (with --nats-pass), or --nats-token TOKEN
  --data DIR          LMDB data folder (default .turnloom/data)
  --prefix P          subject prefix (default turnloom)
  --auth FILE         tokens and scopes as JSON: {"tokens":{"<token>":{"principal":"alice","scopes":["read","operate"]}}}
  --script FILE       script for the scripted provider (see docs/providers.md)
  --max-payload N     largest request in bytes (default 1048576)
  --approval-timeout S  an approval nobody answers expires after S seconds (default: never)`;

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      nats: { type: 'string' },
      'nats-user': { type: 'string' },
      'nats-pass': { type: 'string' },
      'nats-token': { type: 'string' },
      data: { type: 'string', default: '.turnloom/data' },
      prefix: { type: 'string', default: 'turnloom' },
      auth: { type: 'string' },
      script: { type: 'string' },
      'max-payload': { type: 'string' },
      'approval-timeout': { type: 'string' },
    },
  });
  const positive = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new Error(`--${name} must be a positive number, not "${value}"`);
    return number;
  };
  const maxPayload = positive('max-payload', values['max-payload']);
  const approvalTimeout = positive('approval-timeout', values['approval-timeout']);
  const dataDir = resolve(values.data!);
  const auth = values.auth ? authConfigSchema.parse(JSON.parse(readFileSync(values.auth, 'utf8'))) : null;
  const bus: Bus = values.nats
    ? await NatsBus.connect({
        servers: values.nats,
        name: 'turnloom-engine',
        ...(values['nats-user'] ? { user: values['nats-user'], pass: values['nats-pass'] ?? '' } : {}),
        ...(values['nats-token'] ? { token: values['nats-token'] } : {}),
      })
    : new InProcessHub().connect();
  const setup = providersFromEnvironment(process.env, values.script);
  const server = await startTurnloomServer({
    bus,
    store: LmdbStore.open(dataDir),
    prefix: values.prefix!,
    auth,
    providers: setup.providers,
    defaultProvider: setup.defaultProvider,
    ...(maxPayload ? { maxPayloadBytes: maxPayload } : {}),
    ...(approvalTimeout ? { approvalTimeoutMs: approvalTimeout * 1_000 } : {}),
  });
  console.log(`turnloom ${VERSION} serving on ${values.nats ?? 'the in-process bus (pass --nats URL to serve other processes)'}`);
  console.log(`  API: ${server.subjects.prefix}.v1.api.<method>  events: ${server.subjects.prefix}.v1.evt.<threadId>  live: ${server.subjects.prefix}.v1.live.<threadId>`);
  console.log(`  data: ${dataDir}`);
  console.log(`  ${setup.summary}`);
  console.log(`  auth: ${auth ? `${Object.keys(auth.tokens).length} tokens` : 'open (every caller has every scope)'}`);
  if (values.nats && !auth) console.warn('  warning: no --auth file, so anyone who can reach this NATS server can do anything');

  await new Promise<void>((done) => {
    const shutdown = (signal: string) => {
      console.log(`${signal}: finishing requests in flight, settling running turns, closing the store…`);
      process.off('SIGINT', shutdown);
      process.off('SIGTERM', shutdown);
      done();
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  });
  await server.stop();
  await bus.close();
  console.log('stopped');
  return 0;
}
