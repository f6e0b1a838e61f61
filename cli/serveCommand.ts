import { type Bus, TurnloomError } from '../domain/index.ts';
import { hostname } from 'node:os';
import { InProcessHub, NatsBus, subjects } from '../bus/index.ts';
import { ClusterNode } from '../services/cluster/index.ts';
import { type ConfiguredWorker, configuredWorker } from './workerSetup.ts';
import { cliLogger, logArgOptions, logSettings, logUsage } from './cliLogger.ts';
import { startTelemetry } from './telemetry.ts';
import { type AuthConfig, DEFAULT_MAX_PAYLOAD, authConfigSchema } from '../services/api/index.ts';
import { type TurnloomServer, VERSION, startTurnloomServer } from '../services/turnloomServer.ts';
import type { InspectorRelay } from '../inspector/index.ts';
import { startRelay } from './startRelay.ts';
import { UsageError, integerOption, parseOptions, positiveOption, readJsonFile } from './cliErrors.ts';
import { type NatsSettings, checkInboxPrefix, checkPrefix, natsArgOptions, connectNats, natsSettings, refuseSecretFlags } from './natsOptions.ts';
import { openStore } from './openStore.ts';
import { providersFromEnvironment } from './providerRegistry.ts';
import { commandConfig, compactionOptions } from './commandConfig.ts';
import { registerSecret } from './redact.ts';
import { untilSignal } from './untilSignal.ts';
import { dataFolderFor, workspaceSetup } from './workspaceSetup.ts';

/** The API keeps 4096 bytes of each message for headers, so a payload limit below this leaves no room for `health`. */
export const MIN_MAX_PAYLOAD = 8_192;

export const serveUsage = `turnloom serve [options]
  --nats URL          serve on this NATS server (default: the in-process bus, reachable only from this process)
  --nats-user USER    NATS user name (or TURNLOOM_NATS_USER); its password comes from TURNLOOM_NATS_PASS, a token
                      from TURNLOOM_NATS_TOKEN, never from the command line, where ps shows it
  --nats-creds FILE   NATS credentials file (user JWT and NKEY seed, as nsc writes it)
  --inbox-prefix P    the inbox prefix this NATS user may read (e.g. _INBOX_engine; default _INBOX)
  --data DIR          LMDB data folder (default: one for the workspace under $XDG_DATA_HOME/turnloom, the same
                      folder \`turnloom run\` uses there; never inside the workspace)
  --prefix P          subject prefix (default turnloom)
  --auth FILE         tokens and scopes as JSON: {"tokens":{"<token>":{"principal":"alice","scopes":["read","operate"]}}};
                      "inboxPrefix":"_INBOX_alice" in an entry: answers to that token go only to that inbox space
  --script FILE       script for the scripted provider (see docs/providers.md)
  --max-payload N     largest request in bytes (default 1048576, or the NATS server's max_payload if smaller;
                      at least ${MIN_MAX_PAYLOAD}, at most the server's max_payload)
  --approval-timeout S  an approval nobody answers expires after S seconds (default: never)
  --lease-timeout S   a worker silent this long loses its turns, which resume on another (default 10)
  --context-window N  the model's context window in tokens, when its known one is wrong or unknown: a request
                      estimated over it compacts older turns first (default: the model's, if known)
  --workspace DIR     the folder the local worker's agent works in (default: this folder)
  --no-worker         run the engine alone: turns wait for workers started with \`turnloom worker\`
                      (and reads only the user configuration file, not the workspace's turnloom.json)
  --cluster           one engine of a cluster (needs --nats URL[,URL…]): threads' logs live in the NATS server's
                      JetStream, each thread is owned by one engine at a time and taken over when its engine dies,
                      and this folder is the engine's copy (see docs/cluster.md)
  --replicas N        copies JetStream keeps of the cluster's log (default: 3 on a clustered NATS server, else 1)
${logUsage}
  --inspect PORT      also serve the live state-chart inspector on http://127.0.0.1:PORT (0 picks a free port);
                      with --auth, its page calls the API with the token in TURNLOOM_TOKEN`;

const authFileHint = 'an auth file ({"tokens":{"<token>":{"principal":"alice","scopes":["read"]}}})';

function readAuthFile(path: string): AuthConfig {
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
function payloadLimit(requested: number | undefined, bus: Bus): number {
  const serverMax = bus instanceof NatsBus ? bus.maxPayload : undefined;
  if (serverMax === undefined) return requested ?? DEFAULT_MAX_PAYLOAD;
  if (serverMax < MIN_MAX_PAYLOAD) {
    throw new TurnloomError('unavailable', `the NATS server's max_payload is ${serverMax} bytes, below the ${MIN_MAX_PAYLOAD} the API needs; raise max_payload in its configuration`);
  }
  if (requested !== undefined && requested > serverMax) {
    throw new UsageError(`serve: --max-payload ${requested} is over the NATS server's max_payload of ${serverMax} bytes; lower it, or raise max_payload in the server's configuration`);
  }
  return requested ?? Math.min(DEFAULT_MAX_PAYLOAD, serverMax);
}

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
      workspace: { type: 'string' },
      'lease-timeout': { type: 'string' },
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
  const contextWindow = integerOption('serve', 'context-window', values['context-window'], { min: 1_000, unit: 'tokens' });
  const inspectPort = integerOption('serve', 'inspect', values.inspect, { min: 0, max: 65_535 });
  const log = cliLogger(logSettings('serve', values['log-format'], values['log-level']));
  const replicas = integerOption('serve', 'replicas', values.replicas, { min: 1, max: 5 });
  if (values.cluster && values.nats === undefined) throw new UsageError('serve: --cluster needs --nats URL[,URL…]: a cluster\'s engines share a NATS server (its JetStream holds the log)');
  if (replicas !== undefined && !values.cluster) throw new UsageError('serve: --replicas is for --cluster');
  const token = process.env.TURNLOOM_TOKEN || undefined;
  if (token) registerSecret(token);
  const prefix = checkPrefix('serve', values.prefix!);
  const inboxPrefix = checkInboxPrefix('serve', values['inbox-prefix']);
  const auth = values.auth !== undefined ? readAuthFile(values.auth) : null;
  let nats: NatsSettings | null = null;
  if (values.nats !== undefined) {
    nats = natsSettings(values.nats, { user: values['nats-user'], credsFile: values['nats-creds'], env: process.env });
  } else if (values['nats-user'] !== undefined || values['nats-creds'] !== undefined) {
    throw new UsageError(`serve: ${values['nats-user'] !== undefined ? '--nats-user' : '--nats-creds'} needs --nats URL`);
  }
  const dataDir = await dataFolderFor(values.workspace ?? '.', values.data);
  const secretFiles = [values.auth, values['nats-creds']].filter((file) => file !== undefined);
  const workspace = values['no-worker'] ? null : await workspaceSetup('serve', '--workspace', values.workspace ?? '.', dataDir, secretFiles);
  // An engine alone serves no workspace, so only the user file speaks for it.
  const { config, files } = commandConfig(workspace?.workspace ?? null);
  const setup = await providersFromEnvironment(process.env, values.script, { config, files });
  const compaction = compactionOptions(config, contextWindow, setup.defaultProvider.name);

  // Then the resources, each closed again if a later one fails.
  const telemetry = await startTelemetry('turnloom-serve');
  const store = openStore(dataDir);
  let bus: Bus | undefined;
  let server: TurnloomServer | undefined;
  let relay: InspectorRelay | undefined;
  let cluster: ClusterNode | undefined;
  let configured: ConfiguredWorker | undefined;
  try {
    if (workspace) configured = await configuredWorker(config, workspace.workspace, workspace.tools, log);
    bus = nats ? await connectNats(nats, 'turnloom-engine', inboxPrefix, log) : new InProcessHub(log).connect();
    const limit = payloadLimit(maxPayload, bus);
    if (values.cluster && bus instanceof NatsBus) {
      const info = bus.connection.info;
      cluster = await ClusterNode.open({
        nc: bus.connection,
        bus,
        subjects: subjects(prefix),
        local: store,
        replicas: replicas ?? (info?.cluster ? Math.min(3, info.connect_urls?.length ?? 1) : 1),
        about: { host: hostname(), pid: process.pid, startedAt: Date.now(), data: dataDir },
        log,
      });
    }
    server = await startTurnloomServer({
      bus,
      store: cluster?.store ?? store,
      log,
      ...(cluster ? { cluster } : {}),
      prefix,
      auth,
      ...(workspace ? { providers: setup.providers, localWorker: { workspace: workspace.workspace, ...configured!.options, checkpoints: workspace.checkpoints } } : {}),
      defaultProvider: setup.defaultProvider,
      maxPayloadBytes: limit,
      ...(approvalTimeout ? { approvalTimeoutMs: approvalTimeout * 1_000 } : {}),
      ...(leaseTimeout ? { workers: { leaseTimeoutMs: leaseTimeout * 1_000 } } : {}),
      runner: { compaction },
    });
    if (inspectPort !== undefined) relay = await startRelay({ bus, prefix, port: inspectPort, log, ...(token ? { token } : {}) }, '--inspect');
  } catch (error) {
    await server?.stop().catch(() => {});
    await configured?.close();
    await bus?.close().catch(() => {});
    await store.close().catch(() => {});
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
      console.log(`  cluster: engine ${health.engineId} of ${health.engines.length} (${health.engines.join(', ')}); log ${health.log.stream}, ${health.log.replicas} ${health.log.replicas === 1 ? 'copy' : 'copies'}`);
    }
    console.log(`  ${values['no-worker'] ? 'no local worker (--no-worker): turns wait for `turnloom worker` processes' : `local worker ${server.worker!.workerId}; ${setup.summary}; ${workspace!.summary}`}`);
    if (workspace && setup.defaultProvider.name === 'scripted') {
      // What a person gets without a key, so a first turn that only lists the folder is no surprise.
      console.log(`  no OPENAI_API_KEY or ANTHROPIC_API_KEY: the scripted provider answers, ${values.script ? `playing ${values.script}` : 'listing the workspace each turn (--script FILE plays edits and commands: docs/providers.md)'}`);
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
