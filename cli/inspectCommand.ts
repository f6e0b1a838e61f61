import { TurnloomClient } from '../client/index.ts';
import { startRelay } from './startRelay.ts';
import { integerOption, parseOptions } from './cliErrors.ts';
import { checkInboxPrefix, checkPrefix, connectNats, natsArgOptions, natsSettings, refuseSecretFlags } from './natsOptions.ts';
import { registerSecret } from './redact.ts';
import { untilSignal } from './untilSignal.ts';
import { cliLogger, logArgOptions, logSettings } from './cliLogger.ts';
import { DEFAULT_INSPECT_PORT, inspectUsage } from './commandUsage.ts';



/** The page and its relay, for an engine reached over NATS. */
export async function inspectCommand(args: string[]): Promise<number> {
  refuseSecretFlags('inspect', args);
  const { values } = parseOptions('inspect', {
    args,
    options: {
      ...natsArgOptions,
      port: { type: 'string' },
      prefix: { type: 'string', default: 'turnloom' },
      ...logArgOptions,
    },
  });
  if (values.help) {
    console.log(inspectUsage);
    return 0;
  }
  const log = cliLogger(logSettings('inspect', values['log-format'], values['log-level']));
  const port = integerOption('inspect', 'port', values.port, { min: 0, max: 65_535 }) ?? DEFAULT_INSPECT_PORT;
  const prefix = checkPrefix('inspect', values.prefix!);
  const inboxPrefix = checkInboxPrefix('inspect', values['inbox-prefix']);
  const token = process.env.TURNLOOM_TOKEN || undefined;
  if (token) registerSecret(token);
  const nats = natsSettings(values.nats ?? 'nats://127.0.0.1:4222', { user: values['nats-user'], credsFile: values['nats-creds'], env: process.env });

  const bus = await connectNats(nats, 'turnloom-inspect', inboxPrefix, log);
  try {
    const relay = await startRelay({ bus, prefix, port, log, ...(token ? { token } : {}) }, '--port');
    console.log(`turnloom inspect: ${relay.pageUrl} (engine on ${nats.display}, prefix ${prefix})`);
    for (const warning of nats.warnings) console.warn(`  ${warning}`);
    // The page works without an engine and catches up when one answers; say so rather than show an empty page.
    await new TurnloomClient(bus, { prefix, timeoutMs: 2_000 }).call('health', {}).catch((error: Error) => {
      console.warn(`  no engine answers on prefix ${prefix} yet (${error.message}); the page follows it once one does`);
    });
    await untilSignal('closing the inspector…');
    await relay.stop();
  } finally {
    await bus.close();
  }
  console.log('stopped');
  return 0;
}
