import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpTools } from '../../adapters/mcp/index.ts';
import { resourcesBeyond, run } from './mcpFixture.ts';

const longToolName = `a.tool.whose.name.runs.on${'-and-on'.repeat(10)}`;

/** An MCP server over Streamable HTTP on a free port of 127.0.0.1, one session per client, that wants header `x-test-key: open` on every request. */
class TestHttpServer {
  private readonly sessions = new Map<string, StreamableHTTPServerTransport>();
  readonly ended: string[] = [];
  private http: Server | null = null;
  port = 0;

  private mcpServer(): McpServer {
    const server = new McpServer({ name: 'test-http', version: '1.0.0' });
    server.registerTool('greet', { description: 'Greets someone by name', inputSchema: { name: z.string() } }, async ({ name }) => ({ content: [{ type: 'text', text: `Hello, ${name}!` }] }));
    server.registerTool('explode', { description: 'Always fails' }, async () => {
      throw new Error('the fuse was lit');
    });
    server.registerTool(longToolName, { description: 'Has a long name' }, async () => ({ content: [{ type: 'text', text: 'long' }], structuredContent: { unused: true } }));
    server.registerTool('weather', { description: 'Answers in structured content only' }, async () => ({ content: [], structuredContent: { sky: 'clear' } }));
    return server;
  }

  async listen(port = 0): Promise<string> {
    this.http = createServer((req, res) => {
      if (req.headers['x-test-key'] !== 'open') {
        res.writeHead(401).end('missing key');
        return;
      }
      const sessionId = req.headers['mcp-session-id'];
      const known = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
      if (known) {
        void known.handleRequest(req, res);
        return;
      }
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void this.sessions.set(id, transport),
        onsessionclosed: (id) => {
          this.sessions.delete(id);
          this.ended.push(id);
        },
      });
      void this.mcpServer()
        .connect(transport)
        .then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((resolve) => this.http!.listen(port, '127.0.0.1', resolve));
    this.port = (this.http.address() as AddressInfo).port;
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  async stop(): Promise<void> {
    const http = this.http;
    this.http = null;
    await Promise.all([...this.sessions.values()].map((transport) => transport.close()));
    this.sessions.clear();
    if (!http) return;
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  }
}

describe('MCP tools from a Streamable HTTP server', () => {
  const servers: TestHttpServer[] = [];
  const opened: McpTools[] = [];
  const serve = async () => {
    const server = new TestHttpServer();
    servers.push(server);
    return { server, url: await server.listen() };
  };
  const start = async (url: string, headers: Record<string, string> = { 'x-test-key': 'open' }) => {
    const tools = await McpTools.start({ servers: [{ name: 'web', url, headers }], root: process.cwd() });
    opened.push(tools);
    return tools;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((tools) => tools.close()));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  it('lists and calls its tools, with the headers of the spec', async () => {
    const { url } = await serve();
    const tools = await start(url);
    expect(tools.status()).toEqual([{ name: 'web', state: 'ready', tools: 4 }]);
    const names = tools.specs().map((spec) => spec.name);
    expect(names.slice(0, 2)).toEqual(['web__greet', 'web__explode']);
    expect(names[2]).toBe(`web__${longToolName}`.replace(/\./g, '_').slice(0, 64));
    expect(names[2]).toHaveLength(64);
    expect(tools.specs()[0]).toMatchObject({ description: 'Greets someone by name', inputSchema: { type: 'object', properties: { name: { type: 'string' } } } });
    expect(await run(tools, 'web__greet', { name: 'Ada' })).toEqual({ output: 'Hello, Ada!', isError: false });
    expect(await run(tools, names[2]!)).toEqual({ output: 'long', isError: false });
    expect(await run(tools, 'web__weather')).toEqual({ output: '{"sky":"clear"}', isError: false });
  });

  it('returns a tool that throws as an error result', async () => {
    const { url } = await serve();
    const tools = await start(url);
    const result = await run(tools, 'web__explode');
    expect(result.isError).toBe(true);
    expect(result.output).toContain('the fuse was lit');
  });

  it('leaves out a server that refuses us, saying why', async () => {
    const { url } = await serve();
    const tools = await start(url, {});
    expect(tools.status()).toEqual([{ name: 'web', state: 'failed', tools: 0, error: "could not start: HTTP 401, Streamable HTTP error: Error POSTing to endpoint: missing key" }]);
    expect(tools.specs()).toEqual([]);
  });

  it('reconnects to a server that went away and came back', async () => {
    const { server, url } = await serve();
    const tools = await start(url);
    const port = server.port;
    await server.stop();
    const gone = await run(tools, 'web__greet', { name: 'Bob' });
    expect(gone.isError).toBe(true);
    expect(gone.output).toMatch(/^MCP server "web" could not be reached \(.+\); it is being restarted$/);
    await server.listen(port);
    expect(await run(tools, 'web__greet', { name: 'Bob' })).toEqual({ output: 'Hello, Bob!', isError: false });
    expect(tools.status()).toEqual([{ name: 'web', state: 'ready', tools: 4 }]);
  });

  it('ends its session on close and leaves no socket behind', async () => {
    const { server, url } = await serve();
    const baseline = process.getActiveResourcesInfo();
    const tools = await McpTools.start({ servers: [{ name: 'web', url, headers: { 'x-test-key': 'open' } }], root: process.cwd() });
    expect(await run(tools, 'web__greet', { name: 'Cy' })).toMatchObject({ isError: false });
    await tools.close();
    expect(server.ended).toHaveLength(1);
    await server.stop();
    // The client's sockets close once the server has closed its side, a moment later.
    await expect.poll(() => resourcesBeyond(baseline), { timeout: 5_000 }).toEqual([]);
  });
});
