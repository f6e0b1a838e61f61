import { idPattern } from '../bus/index.ts';
import { Worker } from '../services/worker/worker.ts';
import { configuredWorker } from './workerSetup.ts';
import { UsageError, integerOption, parseOptions } from './cliErrors.ts';
import { checkInboxPrefix, checkPrefix, natsArgOptions, connectNats, natsSettings, refuseSecretFlags } from './natsOptions.ts';
import { providersFromEnvironment } from './providerRegistry.ts';
import { commandConfig, compactionOptions } from './commandConfig.ts';
import { withProjectServers } from './mcpConsent.ts';
import { untilSignal } from './untilSignal.ts';
import { cliLogger, logArgOptions, logSettings } from './cliLogger.ts';
import { startTelemetry } from './telemetry.ts';
import { workspaceSetup } from './workspaceSetup.ts';
import { workerUsage } from './commandUsage.ts';


/** A worker on its own: the engine is reached only through NATS. */
export async function workerCommand(args: string[]): Promise<number> {
  refuseSecretFlags('worker', args);
  const { values } = parseOptions('worker', {
    args,
    options: {
      ...natsArgOptions,
      workspace: { type: 'string' },
      env: { type: 'string', default: 'default' },
      id: { type: 'string' },
      prefix: { type: 'string', default: 'turnloom' },
      script: { type: 'string' },
      concurrency: { type: 'string' },
      'context-window': { type: 'string' },
      ...logArgOptions,
    },
  });
  if (values.help) {
    console.log(workerUsage);
    return 0;
  }
  if (values.nats === undefined) throw new UsageError('worker: --nats URL is required (a worker reaches its engine through NATS); see turnloom worker --help');
  if (values.workspace === undefined) throw new UsageError('worker: --workspace DIR is required; see turnloom worker --help');
  // A worker keeps no data folder of its own.
  const workspace = await workspaceSetup('worker', '--workspace', values.workspace, null, values['nats-creds'] === undefined ? [] : [values['nats-creds']]);
  for (const [option, value] of [['--env', values.env], ['--id', values.id]] as const) {
    if (value !== undefined && !idPattern.test(value)) throw new UsageError(`worker: ${option} "${value}" must be 1-128 letters, digits, "_" or "-"`);
  }
  const prefix = checkPrefix('worker', values.prefix!);
  const inboxPrefix = checkInboxPrefix('worker', values['inbox-prefix']);
  const concurrency = integerOption('worker', 'concurrency', values.concurrency, { min: 1, max: 1_000 });
  const contextWindow = integerOption('worker', 'context-window', values['context-window'], { min: 1_000, unit: 'tokens' });
  const log = cliLogger(logSettings('worker', values['log-format'], values['log-level']));
  const loaded = commandConfig(workspace.workspace);
  const { files } = loaded;
  // A worker has nobody to ask: a project's server runs only once allowed.
  const { config, notes: serverNotes } = await withProjectServers(loaded, null);
  for (const line of serverNotes) log.warn({}, line);
  const setup = await providersFromEnvironment(process.env, values.script, { config, files });
  const compaction = compactionOptions(config, contextWindow, setup.defaultProvider.name);
  const nats = natsSettings(values.nats, { user: values['nats-user'], credsFile: values['nats-creds'], env: process.env });

  const telemetry = await startTelemetry('turnloom-worker');
  const bus = await connectNats(nats, `turnloom-worker${values.id ? `-${values.id}` : ''}`, inboxPrefix, log).catch(async (error: unknown) => {
    await telemetry.stop();
    throw error;
  });
  const configured = await configuredWorker(config, workspace, log);
  try {
    const worker = await new Worker({
      bus,
      prefix,
      ...(values.id ? { workerId: values.id } : {}),
      environment: values.env!,
      workspace: workspace.workspace,
      ...configured.options,
      checkpoints: workspace.checkpoints,
      adapterFor: (choice) => setup.providers[choice.name],
      log,
      ...(concurrency ? { concurrency } : {}),
      loop: { compaction },
    }).start();
    console.log(`turnloom worker ${worker.workerId} on ${nats.display}, environment ${worker.environment}, ${workspace.summary}`);
    console.log(`  ${setup.summary}`);
    if (files.length > 0) console.log(`  config: ${files.join(', ')}`);
    for (const note of configured.notes) console.log(note);
    if (telemetry.enabled) console.log('  telemetry: traces and metrics over OTLP/HTTP (OTEL_* variables)');
    if (workspace.isolationWarning) console.warn(`  ${workspace.isolationWarning}`);
    for (const warning of nats.warnings) console.warn(`  ${warning}`);
    await untilSignal('settling running turns…');
    await worker.stop();
  } finally {
    await configured.close();
    await bus.close();
    await telemetry.stop();
  }
  console.log('stopped');
  return 0;
}
