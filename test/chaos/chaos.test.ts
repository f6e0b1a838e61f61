import { describe, expect, it } from 'vitest';
import { runChaos } from './chaos.ts';

describe('a short chaos run (npm run chaos runs a longer one)', () => {
  it('loses, duplicates and strands nothing while workers, the engine and nats-server are killed', async () => {
    const report = await runChaos({ turns: 6, seconds: 12, seed: 20261130 });
    console.log(`chaos: ${JSON.stringify(report)}`);
    expect(report.started).toBe(6);
    expect(report.kills.worker + report.kills.engine + report.kills.nats).toBeGreaterThan(0);
    expect(report.completed + report.failed + report.interrupted).toBe(6);
    expect({ stuck: report.stuck, lost: report.lost, duplicated: report.duplicated }).toEqual({ stuck: 0, lost: 0, duplicated: 0 });
  }, 300_000);

  it('and three engines of a cluster on a 3-node nats-server cluster, engines and nats-servers killed too', async () => {
    const report = await runChaos({ turns: 6, seconds: 15, seed: 20261202, engines: 3, natsNodes: 3 });
    console.log(`chaos: ${JSON.stringify(report)}`);
    expect(report.started).toBe(6);
    expect(report.kills.worker + report.kills.engine + report.kills.nats).toBeGreaterThan(0);
    expect(report.completed + report.failed + report.interrupted).toBe(6);
    expect({ stuck: report.stuck, lost: report.lost, duplicated: report.duplicated }).toEqual({ stuck: 0, lost: 0, duplicated: 0 });
  }, 300_000);
});
