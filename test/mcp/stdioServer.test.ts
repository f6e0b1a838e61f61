import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { McpTools } from '../../adapters/mcp/index.ts';
import { decidePermission } from '../../domain/index.ts';
import { eventually, everythingServer, resourcesBeyond, run, toolCall } from './mcpFixture.ts';

describe('MCP tools from a stdio server (server-everything)', () => {
  let root: string;
  let tools: McpTools;
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'turnloom-mcp-'));
    tools = await McpTools.start({ servers: [everythingServer()], root });
  });
  afterAll(async () => {
    await tools.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('offers the server tools as <server>__<tool>, with the server schemas and descriptions', () => {
    expect(tools.status()).toEqual([{ name: 'everything', state: 'ready', tools: expect.any(Number), pid: expect.any(Number) }]);
    const specs = tools.specs();
    expect(specs.length).toBe(tools.status()[0]!.tools);
    for (const spec of specs) {
      expect(spec.name).toMatch(/^everything__[a-zA-Z0-9_-]+$/);
      expect(spec.name.length).toBeLessThanOrEqual(64);
      expect(spec.description.length).toBeLessThanOrEqual(2_000);
    }
    const echo = specs.find((spec) => spec.name === 'everything__echo')!;
    expect(echo.description).toBe('Echoes back the input string');
    expect(echo.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
    expect(tools.handles(toolCall('everything__echo', {}))).toBe(true);
    expect(tools.handles(toolCall('read', {}))).toBe(false);
  });

  it('classifies every call as a command named by its tool, so it asks unless a rule allows it', () => {
    const kind = tools.classify(toolCall('everything__echo', { message: 'hi' }));
    expect(kind).toEqual({ kind: 'command', subject: 'everything__echo' });
    const call = { tool: 'everything__echo', ...kind };
    const rules = [{ tool: 'everything__echo', pattern: '*', decision: 'allow' as const }];
    expect(decidePermission({ mode: 'ask', rules: [] }, 'ask', call)).toBe('ask');
    expect(decidePermission({ mode: 'auto-edits', rules: [] }, 'auto-edits', call)).toBe('ask');
    expect(decidePermission({ mode: 'ask', rules }, 'ask', call)).toBe('allow');
    expect(decidePermission({ mode: 'read-only', rules }, 'read-only', call)).toBe('deny');
    expect(decidePermission({ mode: 'full', rules: [] }, 'full', call)).toBe('allow');
  });

  it('calls the echo and sum tools', async () => {
    expect(await run(tools, 'everything__echo', { message: 'hello' })).toEqual({ output: 'Echo: hello', isError: false });
    expect(await run(tools, 'everything__get-sum', { a: 2, b: 40 })).toEqual({ output: 'The sum of 2 and 40 is 42.', isError: false });
  });

  it('shows an image as a line saying what it is', async () => {
    const result = await run(tools, 'everything__get-tiny-image');
    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/^Here's the image you requested:\n\[image image\/png, \d+ bytes\]\nThe image above is the MCP logo\.$/);
  });

  it('turns bad input, an unknown tool and arguments that are no object into error results', async () => {
    const bad = await run(tools, 'everything__get-sum', { a: 'two' });
    expect(bad.isError).toBe(true);
    expect(bad.output).toContain('Input validation error');
    const unknown = await run(tools, 'everything__nope', {});
    expect(unknown.isError).toBe(true);
    expect(unknown.output).toMatch(/^no tool named everything__nope; available: everything__echo, /);
    expect(await run(tools, 'everything__echo', [1])).toEqual({ output: 'invalid input for everything__echo: expected an object of arguments', isError: true });
    expect(await run(tools, 'everything__echo', { invalidJson: '{"message' })).toEqual({ output: 'invalid input for everything__echo: the arguments were not valid JSON: {"message', isError: true });
  });

  it('ends an aborted call as interrupted, and the next call works', async () => {
    const controller = new AbortController();
    const call = tools.execute(toolCall('everything__trigger-long-running-operation', { duration: 5, steps: 5 }), controller.signal);
    setTimeout(() => controller.abort(), 200);
    expect(await call).toEqual({ output: 'interrupted', isError: true });
    expect(await run(tools, 'everything__echo', { message: 'after' })).toEqual({ output: 'Echo: after', isError: false });
  });
});

describe('MCP tools with limits (server-everything)', () => {
  let root: string;
  const opened: McpTools[] = [];
  const start = async (...options: Parameters<typeof McpTools.start>) => {
    const tools = await McpTools.start(...options);
    opened.push(tools);
    return tools;
  };
  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'turnloom-mcp-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((tools) => tools.close()));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('ends a call the server does not answer in time with an error naming the timeout; a server that still answers pings is kept', async () => {
    const tools = await start({ servers: [everythingServer({ timeoutMs: 500 })], root, callTimeoutMs: 60_000 });
    const { pid } = tools.status()[0]!;
    expect(await run(tools, 'everything__trigger-long-running-operation', { duration: 3, steps: 3 })).toEqual({
      output: 'MCP server "everything" did not answer "trigger-long-running-operation" within 500 ms',
      isError: true,
    });
    expect(await run(tools, 'everything__echo', { message: 'still here' })).toEqual({ output: 'Echo: still here', isError: false });
    expect(tools.status()[0]).toMatchObject({ state: 'ready', pid });
  });

  it('restarts a server whose process was killed: the next call is a clear error or succeeds, the one after works', async () => {
    // A server of its own: the shared one's restarts this minute (an aborted call, a slow ping on a loaded machine) would leave it none.
    const tools = await start({ servers: [everythingServer()], root });
    const { pid } = tools.status()[0]!;
    process.kill(pid!, 'SIGKILL');
    const next = await run(tools, 'everything__echo', { message: 'one' });
    if (next.isError) expect(next.output).toMatch(/^MCP server "everything" stopped \(killed by SIGKILL, last stderr line: .+\); it is being restarted$/);
    else expect(next.output).toBe('Echo: one');
    expect(await run(tools, 'everything__echo', { message: 'two' })).toEqual({ output: 'Echo: two', isError: false });
    expect(tools.status()[0]).toMatchObject({ state: 'ready', pid: expect.any(Number) });
    expect(tools.status()[0]!.pid).not.toBe(pid);
  });

  it('caps long output, keeping its start and end', async () => {
    const tools = await start({ servers: [everythingServer()], root, maxOutputChars: 200 });
    const result = await run(tools, 'everything__echo', { message: `start ${'x'.repeat(1_000)} end` });
    expect(result.isError).toBe(false);
    expect(result.output.length).toBeLessThanOrEqual(200);
    expect(result.output).toMatch(/^Echo: start x+\n\[\.\.\. \d+ characters cut \.\.\.\]\nx+ end$/);
  });

  it('gives a stdio server the basics of the environment (no secret, no other setting), plus exactly its own env', async () => {
    const env = { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', PLAIN_SETTING: 'not-named', OPENAI_API_KEY: 'sk-not-for-servers', GITHUB_TOKEN: 'ghp-not-either' };
    const tools = await start({ servers: [everythingServer({ env: { SERVER_TOKEN: 'given-on-purpose' } })], root, env });
    const { output } = await run(tools, 'everything__get-env');
    const seen = JSON.parse(output) as Record<string, string>;
    expect(seen).toMatchObject({ PATH: env.PATH, LANG: 'C.UTF-8', SERVER_TOKEN: 'given-on-purpose' });
    expect(seen).not.toHaveProperty('PLAIN_SETTING');
    expect(seen).not.toHaveProperty('OPENAI_API_KEY');
    expect(seen).not.toHaveProperty('GITHUB_TOKEN');
    expect(output).not.toContain('not-for-servers');
  });

  it('leaves out a server that cannot start, says why, and serves the others', async () => {
    const tools = await start({
      servers: [
        { name: 'missing', command: 'turnloom-no-such-mcp-server' },
        { name: 'crashing', command: process.execPath, args: ['-e', 'console.error("boom: no config file"); process.exit(3)'] },
        { name: 'bad.name', command: process.execPath },
        everythingServer(),
      ],
      root,
    });
    expect(tools.status()).toEqual([
      { name: 'missing', state: 'failed', tools: 0, error: 'could not start: no such command: turnloom-no-such-mcp-server' },
      { name: 'crashing', state: 'failed', tools: 0, error: 'could not start: stopped (exit code 3, last stderr line: boom: no config file)' },
      { name: 'bad.name', state: 'failed', tools: 0, error: 'its name must be 1 to 32 letters, digits, "_" or "-"' },
      { name: 'everything', state: 'ready', tools: expect.any(Number), pid: expect.any(Number) },
    ]);
    expect(tools.specs().every((spec) => spec.name.startsWith('everything__'))).toBe(true);
    expect(await run(tools, 'everything__echo', { message: 'fine' })).toEqual({ output: 'Echo: fine', isError: false });
  });

  it('stops restarting a server that keeps dying, and says why', async () => {
    const tools = await start({ servers: [everythingServer()], root });
    for (let restart = 1; restart <= 3; restart++) {
      const { pid } = tools.status()[0]!;
      process.kill(pid!, 'SIGKILL');
      await eventually(() => tools.status()[0]!.state === 'ready' && tools.status()[0]!.pid !== pid);
    }
    process.kill(tools.status()[0]!.pid!, 'SIGKILL');
    await eventually(() => tools.status()[0]!.state === 'failed');
    expect(tools.status()[0]!.error).toMatch(/^stopped \(killed by SIGKILL.*\); restarted 3 times within a minute, so it is left stopped for now$/);
    const result = await run(tools, 'everything__echo', { message: 'anyone?' });
    expect(result).toEqual({ output: `MCP server "everything" is not running: ${tools.status()[0]!.error}`, isError: true });
  });

  it('leaves no process, pipe or timer behind once closed', async () => {
    const baseline = process.getActiveResourcesInfo();
    const tools = await McpTools.start({ servers: [everythingServer(), { name: 'missing', command: 'turnloom-no-such-mcp-server' }], root });
    expect(await run(tools, 'everything__echo', { message: 'x' })).toMatchObject({ isError: false });
    expect(resourcesBeyond(baseline)).toContain('ProcessWrap');
    await tools.close();
    expect(resourcesBeyond(baseline)).toEqual([]);
    expect(await run(tools, 'everything__echo', { message: 'x' })).toEqual({ output: 'MCP server "everything" was closed', isError: true });
  });
});
