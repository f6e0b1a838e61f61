import { type Bus, TurnloomError } from '../domain/index.ts';
import { hostname } from 'node:os';
import { InProcessHub, subjects } from '../bus/index.ts';
import { NatsBus } from '../bus/natsBus.ts';
import type { ClusterNode } from '../services/cluster/index.ts';
import type { ConfiguredWorker } from './workerSetup.ts';
import { cliLogger, logArgOptions, logSettings } from './cliLogger.ts';
import type { AuthConfig } from '../services/api/auth.ts';
import { EngineClaim } from '../services/api/engineClaim.ts';
import type { TurnloomServer } from '../services/turnloomServer.ts';
import { VERSION } from '../domain/version.ts';
import type { InspectorRelay } from '../inspector/index.ts';
import { UsageError, integerOption, parseOptions, positiveOption } from './cliErrors.ts';
import { type NatsSettings, checkInboxPrefix, checkPrefix, natsArgOptions, connectNats, natsSettings, refuseSecretFlags } from './natsOptions.ts';
import { registerSecret } from './redact.ts';
import { untilSignal } from './untilSignal.ts';
import { MIN_MAX_PAYLOAD, serveUsage } from './commandUsage.ts';



const authFileHint = 'an auth file ({"tokens":{"<token>":{"principal":"alice","scopes":["read"]}}})';

/** Loads its schema (and the JSON reader's) only when there is a file: without one, NATS is connected to before either. */
async function readAuthFile(path: string): Promise<AuthConfig> {
  const [{ readJsonFile }, { authConfigSchema }] = await Promise.all([import('./readJsonFile.ts'), import('../services/api/auth.ts')]);
  return readJsonFile('--auth', path, authConfigSchema, {
    expected: authFileHint,
    // The tokens are the keys: keep them out of every message, including the schema's complaint about one.
    inspect: (raw) => {
      const tokens = (raw as { tokens?: unknown } | null)?.tokens;
      if (tokens && typeof tokens === 'object') for (const token of Object.keys(tokens)) registerSecret(token);
    },
    hidePath: (path) => (path[0] === 'tokens' && path.length > 1 ? ['tokens', '<token>', ...path.slice(2)] : path),
  });
}

/** The payload limit to serve with: the user's, checked against what the NATS server accepts, or the default. */
function payloadLimit(requested: number | undefined, bus: Bus, byDefault: number): number {
  const serverMax = bus instanceof NatsBus ? bus.maxPayload : undefined;
  if (serverMax === undefined) return requested ?? byDefault;
  if (serverMax < MIN_MAX_PAYLOAD) {
    throw new TurnloomError('unavailable', `the NATS server's max_payload is ${serverMax} bytes, below the ${MIN_MAX_PAYLOAD} the API needs; raise max_payload in its configuration`);
  }
  if (requested !== undefined && requested > serverMax) {
    throw new UsageError(`serve: --max-payload ${requested} is over the NATS server's max_payload of ${serverMax} bytes; lower it, or raise max_payload in the server's configuration`);
  }
  return requested ?? Math.min(byDefault, serverMax);
}

/**
 * What an engine's start needs past its options (the engine, its store, the
 * worker, the workspace's setup): most of what serve loads, imported as one
 * while NATS connects and the claim listens.
 */
const engineParts = () =>
  Promise.all([
    import('./workspaceSetup.ts'),
    import('./commandConfig.ts'),
    import('./providerRegistry.ts'),
    import('./telemetry.ts'),
    import('./openStore.ts'),
    import('./workerSetup.ts'),
    import('../services/turnloomServer.ts'),
    import('../services/api/apiServer.ts'),
    import('./mcpConsent.ts'),
  ]).then(([workspace, config, providers, telemetry, store, worker, server, api, consent]) => ({ ...workspace, ...config, ...providers, ...telemetry, ...store, ...worker, ...server, ...consent, DEFAULT_MAX_PAYLOAD: api.DEFAULT_MAX_PAYLOAD }));

export async function serveCommand(args: string[]): Promise<number> {
  refuseSecretFlags('serve', args);
  const { values } = parseOptions('serve', {
    args,
    options: {
      ...natsArgOptions,
      data: { type: 'string' },
      prefix: { type: 'string', default: 'turnloom' },
      auth: { type: 'string' },
      script: { type: 'string' },
      'max-payload': { type: 'string' },
      'approval-timeout': { type: 'string' },
      'no-worker': { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
      ...logArgOptions,
      replicas: { type: 'string' },
      shards: { type: 'string' },
      workspace: { type: 'string' },
      'lease-timeout': { type: 'string' },
      'max-running-turns': { type: 'string' },
      'max-waiting-turns': { type: 'string' },
      'context-window': { type: 'string' },
      inspect: { type: 'string' },
    },
  });
  if (values.help) {
    console.log(serveUsage);
    return 0;
  }

  // Everything the user gave is checked before anything is opened, so a mistake never leaves a connection behind.
  const maxPayload = integerOption('serve', 'max-payload', values['max-payload'], { min: MIN_MAX_PAYLOAD, unit: 'bytes' });
  const approvalTimeout = positiveOption('serve', 'approval-timeout', values['approval-timeout']);
  const leaseTimeout = positiveOption('serve', 'lease-timeout', values['lease-timeout']);
  const maxRunningTurns = integerOption('serve', 'max-running-turns', values['max-running-turns'], { min: 1 });
  const maxWaitingTurns = integerOption('serve', 'max-waiting-turns', values['max-waiting-turns'], { min: 0 });
  const contextWindow = integerOption('serve', 'context-window', values['context-window'], { min: 1_000, unit: 'tokens' });
  const inspectPort = integerOption('serve', 'inspect', values.inspect, { min: 0, max: 65_535 });
  const log = cliLogger(logSettings('serve', values['log-format'], values['log-level']));
  const replicas = integerOption('serve', 'replicas', values.replicas, { min: 1, max: 5 });
  if (values.cluster && values.nats === undefined) throw new UsageError('serve: --cluster needs --nats URL[,URL…]: a cluster\'s engines share a NATS server (its JetStream holds the log)');
  if (replicas !== undefined && !values.cluster) throw new UsageError('serve: --replicas is for --cluster');
  const shards = integerOption('serve', 'shards', values.shards, { min: 1, max: 65_536 });
  if (shards !== undefined && !values.cluster) throw new UsageError('serve: --shards is for --cluster');
  const token = process.env.TURNLOOM_TOKEN || undefined;
  if (token) registerSecret(token);
  const prefix = checkPrefix('serve', values.prefix!);
  const inboxPrefix = checkInboxPrefix('serve', values['inbox-prefix']);
  const auth = values.auth !== undefined ? await readAuthFile(values.auth) : null;
  let nats: NatsSettings | null = null;
  if (values.nats !== undefined) {
    nats = natsSettings(values.nats, { user: values['nats-user'], credsFile: values['nats-creds'], env: process.env });
  } else if (values['nats-user'] !== undefined || values['nats-creds'] !== undefined) {
    throw new UsageError(`serve: ${values['nats-user'] !== undefined ? '--nats-user' : '--nats-creds'} needs --nats URL`);
  }
  // NATS is connected to, and the prefix claimed, while the workspace, the configuration and the store are set up: the claim
  // listens a moment for another engine on the prefix, and that moment then costs the start nothing. A mistake found
  // meanwhile closes the connection again.
  const connecting = nats ? connectNats(nats, 'turnloom-engine', inboxPrefix, log).then((bus) => ({ bus, claim: claimed(bus, prefix, values.cluster!) })) : null;
  connecting?.catch(() => undefined);
  const loading = engineParts();
  const dropConnection = async () => {
    await connecting?.then(({ bus, claim }) => (claim.release(), bus.close())).catch(() => undefined);
  };
  const prepared = await (async () => {
    const parts = await loading;
    const { dataFolderFor, workspaceSetup, commandConfig, providersFromEnvironment, withProjectServers } = parts;
    const { path: dataDir, location } = await dataFolderFor(values.workspace ?? '.', values.data);
    const secretFiles = [values.auth, values['nats-creds']].filter((file) => file !== undefined);
    const workspace = values['no-worker'] ? null : await workspaceSetup('serve', '--workspace', values.workspace ?? '.', dataDir, secretFiles, location);
    // An engine alone serves no workspace, so only the user file speaks for it.
    const loaded = commandConfig(workspace?.workspace ?? null);
    const { files } = loaded;
    // serve runs unattended: a project's server runs only once allowed.
    const { config, notes: serverNotes } = await withProjectServers(loaded, null);
    for (const line of serverNotes) console.log(`turnloom: ${line}`);
    const setup = await providersFromEnvironment(process.env, values.script, { config, files });
    return { parts, dataDir, workspace, config, files, setup };
  })().catch(async (error: unknown) => {
    await dropConnection();
    throw error;
  });
  const { parts, dataDir, workspace, config, files, setup } = prepared;
  const { compactionOptions, startTelemetry, openStore, configuredWorker, startTurnloomServer } = parts;
  const compaction = compactionOptions(config, contextWindow, setup.defaultProvider.name);

  // Then the resources, each closed again if a later one fails.
  const telemetry = await startTelemetry('turnloom-serve').catch(async (error: unknown) => {
    await dropConnection();
    throw error;
  });
  let store: ReturnType<typeof openStore> | undefined;
  let bus: Bus | undefined;
  let server: TurnloomServer | undefined;
  let relay: InspectorRelay | undefined;
  let cluster: ClusterNode | undefined;
  let configured: ConfiguredWorker | undefined;
  let claim: EngineClaim | undefined;
  try {
    store = openStore(dataDir);
    if (connecting) ({ bus, claim } = await connecting);
    else bus = new InProcessHub(log).connect();
    if (workspace) configured = await configuredWorker(config, workspace, log);
    const limit = payloadLimit(maxPayload, bus, parts.DEFAULT_MAX_PAYLOAD);
    if (values.cluster && bus instanceof NatsBus) {
      const info = bus.connection.info;
      // Loaded only here, as the relay below is: JetStream's client and the inspector's chart layout are no part of a plain serve's start.
      const { ClusterNode } = await import('../services/cluster/index.ts');
      cluster = await ClusterNode.open({
        nc: bus.connection,
        bus,
        subjects: subjects(prefix),
        local: store,
        replicas: replicas ?? (info?.cluster ? Math.min(3, info.connect_urls?.length ?? 1) : 1),
        ...(shards !== undefined ? { shards } : {}),
        replyBudgetBytes: Math.floor(limit / 2),
        about: { host: hostname(), pid: process.pid, startedAt: Date.now(), data: dataDir },
        log,
      });
    }
    server = await startTurnloomServer({
      bus,
      store: cluster?.store ?? store,
      claim,
      log,
      ...(cluster ? { cluster } : {}),
      prefix,
      auth,
      ...(workspace ? { providers: setup.providers, localWorker: { workspace: workspace.workspace, ...configured!.options, checkpoints: workspace.checkpoints } } : {}),
      defaultProvider: setup.defaultProvider,
      maxPayloadBytes: limit,
      ...(approvalTimeout ? { approvalTimeoutMs: approvalTimeout * 1_000 } : {}),
      workers: {
        ...(leaseTimeout ? { leaseTimeoutMs: leaseTimeout * 1_000 } : {}),
        ...(maxRunningTurns !== undefined ? { maxRunningTurns } : {}),
        ...(maxWaitingTurns !== undefined ? { maxWaitingTurns } : {}),
      },
      runner: { compaction },
    });
    if (inspectPort !== undefined) relay = await (await import('./startRelay.ts')).startRelay({ bus, prefix, port: inspectPort, log, ...(token ? { token } : {}) }, '--inspect');
  } catch (error) {
    claim?.release();
    await server?.stop().catch(() => {});
    await configured?.close();
    // A store that did not open leaves a connection made meanwhile to be closed here.
    if (!bus) await dropConnection();
    await bus?.close().catch(() => {});
    await store?.close().catch(() => {});
    await telemetry.stop();
    throw error;
  }

  try {
    console.log(`turnloom ${VERSION} serving on ${nats ? nats.display : 'the in-process bus (pass --nats URL to serve other processes)'}`);
    console.log(`  API: ${server.subjects.prefix}.v1.api.<method>  events: ${server.subjects.prefix}.v1.evt.<threadId>  live: ${server.subjects.prefix}.v1.live.<environment>.<threadId>.<lease channel>`);
    console.log(`  data: ${dataDir}`);
    if (files.length > 0) console.log(`  config: ${files.join(', ')}`);
    if (cluster) {
      const health = cluster.health();
      console.log(`  cluster: engine ${health.engineId} of ${health.engines.length} (${health.engines.join(', ')}); log ${health.log.stream}, ${health.log.shards} shards, ${health.log.replicas} ${health.log.replicas === 1 ? 'copy' : 'copies'}`);
    }
    console.log(`  ${values['no-worker'] ? 'no local worker (--no-worker): turns wait for `turnloom worker` processes' : `local worker ${server.worker!.workerId}; ${setup.summary}; ${workspace!.summary}`}`);
    if (workspace && setup.defaultProvider.name === 'scripted') {
      // What a person gets without a key, so a first turn that only lists the folder is no surprise.
      // Chosen (TURNLOOM_PROVIDER, --script) while keys are set: saying "no key" would be false.
      const others = Object.keys(setup.providers).filter((name) => name !== 'scripted');
      const why = others.length === 0 ? 'no OPENAI_API_KEY or ANTHROPIC_API_KEY' : `the default provider (${others.join(', ')} also configured)`;
      console.log(`  ${why}: the scripted provider answers, ${values.script ? `playing ${values.script}` : 'listing the workspace each turn (--script FILE plays edits and commands: docs/providers.md)'}`);
    }
    for (const note of configured?.notes ?? []) console.log(note);
    if (workspace?.isolationWarning) console.warn(`  ${workspace.isolationWarning}`);
    console.log(`  auth: ${auth ? `${Object.keys(auth.tokens).length} tokens` : 'open (every caller has every scope)'}`);
    for (const warning of nats?.warnings ?? []) console.warn(`  ${warning}`);
    if (relay) console.log(`  inspector: ${relay.pageUrl}`);
    if (telemetry.enabled) console.log('  telemetry: traces and metrics over OTLP/HTTP (OTEL_* variables)');
    if (nats && !auth) console.warn('  warning: no --auth file, so anyone who can reach this NATS server can do anything');

    await untilSignal('finishing requests in flight, settling running turns, closing the store…');
    await relay?.stop();
    await server.stop();
  } finally {
    await configured?.close();
    await bus.close();
    await telemetry.stop();
  }
  console.log('stopped');
  return 0;
}

/** A claim on `prefix`, begun now: awaited by the server as its API starts. */
function claimed(bus: Bus, prefix: string, cluster: boolean): EngineClaim {
  const claim = new EngineClaim(bus, subjects(prefix), cluster ? 'cluster' : 'single');
  claim.claim().catch(() => undefined);
  return claim;
}
