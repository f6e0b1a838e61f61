import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NatsBus } from '../../bus/natsBus.ts';
import { TurnloomClient } from '../../client/index.ts';
import { type CliProcess, runCli } from '../support/cliProcess.ts';
import { type NatsServerHandle, startNatsServer } from '../support/natsServer.ts';
import { tempDir } from '../support/tempDir.ts';
import { everythingServer, serveHttpMcp } from './mcpFixture.ts';

/**
 * MCP tools in a real turn: an engine and workers in their own processes on
 * a real nats-server, the workers starting server-everything over stdio and
 * reaching an MCP server over HTTP, as their configuration file says.
 */
describe('MCP tools in a turn', () => {
  let nats: NatsServerHandle;
  const dir = tempDir('turnloom-mcp-turn-');
  const processes: CliProcess[] = [];
  let slowCalls = 0;
  let http: Awaited<ReturnType<typeof serveHttpMcp>>;
  beforeAll(async () => {
    nats = await startNatsServer();
    http = await serveHttpMcp((server) => {
      server.registerTool('greet', { description: 'Greets someone by name', inputSchema: { name: z.string() } }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));
      // Counts its calls, so a call run twice shows; answers only long after the test killed its caller.
      server.registerTool('deploy', { description: 'Deploys, slowly' }, async () => {
        slowCalls += 1;
        await new Promise((resolve) => setTimeout(resolve, 60_000).unref());
        return { content: [{ type: 'text', text: 'deployed' }] };
      });
    });
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((process) => process.kill('SIGKILL')));
  });
  afterAll(async () => {
    await http.stop();
    await nats.dispose();
    dir.remove();
  });

  it('runs a stdio tool a rule allows and an HTTP tool a person approved; a worker killed during a call leaves it unknown, never run again', async () => {
    const prefix = `mcp${process.pid}`;
    const home = join(dir.path, 'config');
    mkdirSync(join(home, 'turnloom'), { recursive: true });
    const { name: _name, ...everything } = everythingServer() as { name: string; command: string; args: string[] };
    writeFileSync(join(home, 'turnloom', 'config.json'), JSON.stringify({ mcp: { everything, web: { url: http.url } } }));
    const workspace = join(dir.path, 'ws');
    mkdirSync(workspace);
    const script = join(dir.path, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          [{ toolCall: { name: 'everything__echo', input: { message: 'over stdio' } } }, { toolCall: { name: 'web__greet', input: { name: 'Ada' } } }],
          [{ toolCall: { name: 'web__deploy', input: {} } }],
          [{ text: 'done' }],
        ],
      }),
    );
    const engine = runCli(['serve', '--nats', nats.url, '--no-worker', '--prefix', prefix, '--data', join(dir.path, 'data'), '--lease-timeout', '2']);
    processes.push(engine);
    await engine.waitFor('data:');
    const worker = (id: string) => {
      const started = runCli(['worker', '--nats', nats.url, '--workspace', workspace, '--id', id, '--prefix', prefix, '--script', script], { env: { XDG_CONFIG_HOME: home } });
      processes.push(started);
      return started;
    };
    const first = worker('w1');
    await first.waitFor('mcp web: 2 tools');
    expect(first.output()).toMatch(/mcp everything: \d+ tools/);

    const bus = await NatsBus.connect({ servers: nats.url });
    try {
      const api = new TurnloomClient(bus, { prefix });
      const { threadId } = await api.call('thread.create', { rules: [{ tool: 'everything__echo', pattern: '*', decision: 'allow' }] });
      const { turnId } = await api.call('turn.start', { threadId, input: { text: 'ship it' } });
      const turnOf = async () => (await api.call('thread.get', { threadId })).thread.turns[turnId]!;

      // The rule lets the echo run; the HTTP tool asks.
      await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.map((approval) => approval.toolName), { timeout: 30_000 }).toEqual(['web__greet']);
      const [greet] = (await api.call('approval.list', { threadId })).approvals;
      await api.call('approval.respond', { threadId, approvalId: greet!.id, decision: 'approve' });
      await expect.poll(async () => (await api.call('approval.list', { threadId })).approvals.map((approval) => approval.toolName), { timeout: 30_000 }).toEqual(['web__deploy']);
      const [deploy] = (await api.call('approval.list', { threadId })).approvals;
      await api.call('approval.respond', { threadId, approvalId: deploy!.id, decision: 'approve' });
      await expect.poll(() => slowCalls, { timeout: 20_000 }).toBe(1);

      await worker('w2').waitFor('mcp web: 2 tools');
      await first.kill('SIGKILL');
      await expect.poll(async () => (await turnOf()).state, { timeout: 40_000 }).toBe('completed');

      const turn = await turnOf();
      expect(turn.leases).toBe(2);
      const tools = turn.messages[1].parts.filter((part) => part.tool).map((part) => [part.tool!.name, part.state, part.tool!.output]);
      expect(tools).toEqual([
        ['everything__echo', 'completed', 'Echo: over stdio'],
        ['web__greet', 'completed', 'Hello, Ada!'],
        ['web__deploy', 'interrupted', expect.stringContaining('The outcome of this tool call is unknown')],
      ]);
      expect(turn.messages[1].parts.at(-1)!.text).toBe('done');
      expect(slowCalls).toBe(1);
      // The second worker took the turn on with the context the first recorded, and the same header: nothing new to record.
      const { events } = await api.call('thread.events', { threadId, after: 0 });
      expect(events.filter(({ event }) => event.type === 'request.context')).toHaveLength(1);
      expect(events.filter(({ event }) => event.type === 'request.header')).toHaveLength(1);
      // Every call is recorded as any tool call is: the echo ran without asking, the others were approved.
      expect(turn.approvals.map((approval) => [approval.toolName, approval.state])).toEqual([
        ['web__greet', 'consumed'],
        ['web__deploy', 'consumed'],
      ]);
    } finally {
      await bus.close();
    }
  }, 120_000);
});
