import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import path from 'node:path';
import type { McpServerSpec, ToolCall, ToolResult } from '../../domain/index.ts';
import type { McpTools } from '../../adapters/mcp/index.ts';
export { resourcesBeyond } from '../support/runProgram.ts';

const require = createRequire(import.meta.url);
const everythingPackage = require.resolve('@modelcontextprotocol/server-everything/package.json');
const everythingBin = (require(everythingPackage) as { bin: Record<string, string> }).bin['mcp-server-everything']!;

/** The reference server of every MCP feature, over stdio, run by this Node as the package's bin says. */
export const everythingServer = (extra: Partial<Extract<McpServerSpec, { command: string }>> = {}): McpServerSpec => ({
  name: 'everything',
  command: process.execPath,
  args: [path.join(path.dirname(everythingPackage), everythingBin), 'stdio'],
  ...extra,
});

export const toolCall = (name: string, input: unknown): ToolCall => ({ callId: 'call-1', name, input });

/** Runs one call to completion with a signal nobody aborts. */
export function run(tools: McpTools, name: string, input: unknown = {}): Promise<ToolResult> {
  return tools.execute(toolCall(name, input), new AbortController().signal);
}

/** Polls `check` every 50 ms until it holds, or fails after `ms`. */
export async function eventually(check: () => boolean, ms = 8_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An MCP server over Streamable HTTP on a free port of 127.0.0.1 with the tools `register` gives it, one session per client. */
export async function serveHttpMcp(register: (server: McpServer) => void): Promise<{ url: string; stop(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    const known = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (known) return void known.handleRequest(req, res);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, transport) });
    const server = new McpServer({ name: 'test-http', version: '1.0.0' });
    register(server);
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    stop: async () => {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
