import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { assertNatsServerInstalled, freePort, spawnNatsServer, waitForExit } from './natsServer.ts';

/** One nats-server of a private cluster: its own client port, route port and store dir. */
export interface NatsNode {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** SIGKILL, as a crash would; returns once the process is gone. */
  kill(): Promise<void>;
  /** Start again on the same ports and store dir. */
  start(): Promise<void>;
  readonly running: boolean;
}

/** A real N-node nats-server cluster with JetStream on loopback, for tests; never the server at 4222. */
export interface NatsClusterHandle {
  readonly nodes: readonly NatsNode[];
  /** Every node's URL, comma-separated, as `--nats` takes them. */
  readonly url: string;
  readonly urls: readonly string[];
  /** The node a JetStream server name (a stream's leader) names. */
  node(serverName: string): NatsNode | undefined;
  /** Resolves once JetStream answers through every running node. */
  ready(): Promise<void>;
  dispose(): Promise<void>;
}

export async function startNatsCluster(size = 3): Promise<NatsClusterHandle> {
  assertNatsServerInstalled();
  const root = mkdtempSync(join(tmpdir(), 'turnloom-natscluster-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), route: await freePort() })));
  const routes = ports.map(({ route }) => `nats-route://127.0.0.1:${route}`).join(', ');
  const nodes = ports.map(({ client, route }, index) => {
    const name = `n${index + 1}`;
    const storeDir = join(root, name);
    mkdirSync(storeDir, { recursive: true });
    const config = join(root, `${name}.conf`);
    writeFileSync(
      config,
      [`listen: 127.0.0.1:${client}`, `server_name: ${name}`, `jetstream { store_dir: "${storeDir}" }`, `cluster { name: turnloom-test, listen: 127.0.0.1:${route}, routes: [${routes}] }`].join('\n'),
    );
    let child: ChildProcess | undefined;
    const node: NatsNode = {
      name,
      url: `nats://127.0.0.1:${client}`,
      port: client,
      storeDir,
      get running() {
        return child !== undefined && child.exitCode === null && child.signalCode === null;
      },
      start: async () => {
        if (!node.running) child = await spawnNatsServer(['-c', config], name);
      },
      kill: async () => {
        if (!child || !node.running) return;
        child.kill('SIGKILL');
        await waitForExit(child);
      },
    };
    return node;
  });
  await Promise.all(nodes.map((node) => node.start()));
  const handle: NatsClusterHandle = {
    nodes,
    urls: nodes.map((node) => node.url),
    url: nodes.map((node) => node.url).join(','),
    node: (serverName) => nodes.find((node) => node.name === serverName),
    ready: async () => {
      for (const node of nodes.filter((candidate) => candidate.running)) await jetStreamAnswers(node.url);
    },
    dispose: async () => {
      await Promise.all(nodes.map((node) => node.kill()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  await handle.ready();
  return handle;
}

/** Waits until JetStream answers an account request through this node (the cluster has elected its meta leader). */
async function jetStreamAnswers(url: string): Promise<void> {
  const until = Date.now() + 30_000;
  for (;;) {
    const nc = await connect({ servers: url, timeout: 2_000 }).catch(() => null);
    try {
      if (nc) {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        await jsm.getAccountInfo();
        return;
      }
    } catch {
      // Not yet: no meta leader.
    } finally {
      await nc?.close();
    }
    if (Date.now() > until) throw new Error(`JetStream did not answer through ${url} within 30 s`);
    await sleep(200);
  }
}
