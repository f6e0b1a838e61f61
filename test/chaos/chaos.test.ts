import { describe, expect, it } from 'vitest';
import { runChaos } from './chaos.ts';

describe('a short chaos run (npm run chaos runs a longer one)', () => {
  it.each([
    ['one engine and one nats-server, every turn delegating to a sub-agent', { turns: 6, seconds: 12, seed: 20261130, delegate: true }],
    ['three engines of a cluster on a 3-node nats-server cluster, every turn delegating', { turns: 6, seconds: 15, seed: 20261202, engines: 3, natsNodes: 3, delegate: true }],
  ] as const)('%s: workers, engines and nats-servers killed, nothing lost, duplicated or stranded', async (_name, options) => {
    const report = await runChaos(options);
    console.log(`chaos: ${JSON.stringify(report)}`);
    expect(report.started).toBe(6);
    expect(report.children).toBeGreaterThan(0);
    expect(report.kills.worker + report.kills.engine + report.kills.nats).toBeGreaterThan(0);
    expect(report.completed + report.failed + report.interrupted).toBe(6);
    expect({ stuck: report.stuck, lost: report.lost, duplicated: report.duplicated }).toEqual({ stuck: 0, lost: 0, duplicated: 0 });
  }, 300_000);
});
