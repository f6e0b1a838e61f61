import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type RecordedStreamServer, parseChunks, serveRecordedStream } from '../../adapters/providers/recordedStreamServer.ts';
import { expectedFrom, fixturesDir } from '../support/fixtureOracle.ts';
import { type RunResult, plainFolder, run, summaryOf, undoneAfterEach } from './runFixtures.ts';

const fixture = `${fixturesDir}openai-chat/openai-text.chunks.txt`;
const shown = (result: RunResult) => `code ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;

/**
 * A local OpenAI-compatible server (Ollama, llama.cpp, vLLM, LM Studio)
 * takes no key: `turnloom run` pointed at one, with no key anywhere in its
 * environment, runs the turn, and sends no Authorization header at all.
 */
describe('turnloom run on a server that takes no key', () => {
  const { later } = undoneAfterEach();
  const answered = async () => {
    const server: RecordedStreamServer = await serveRecordedStream('openai-chat', [{ kind: 'stream', chunks: parseChunks(readFileSync(fixture, 'utf8')) }]);
    const folder = plainFolder('turnloom-keyless-');
    later(() => folder.remove(), () => server.close());
    return { server, folder };
  };
  const expectAnsweredWithoutKey = (result: RunResult, server: RecordedStreamServer) => {
    expect(result.code, shown(result)).toBe(0);
    expect((summaryOf(result.stdout) as { status: string; text: string }).text).toBe(expectedFrom('openai-chat', fixture).text);
    expect(server.requests.length).toBeGreaterThan(0);
    for (const request of server.requests) {
      expect(request.path).toBe('/v1/chat/completions');
      expect(request.headers.authorization).toBeUndefined();
    }
  };

  it('from OPENAI_BASE_URL alone', async () => {
    const { server, folder } = await answered();
    // The child's environment has no OPENAI_API_KEY (`startRun` leaves every OPENAI_ variable out).
    const result = await run(['run', 'hello', '--cwd', folder.path, '--approve', 'deny', '--json'], { cwd: folder.path, env: { OPENAI_BASE_URL: server.baseURL, XDG_CONFIG_HOME: join(folder.path, 'config') } });
    expectAnsweredWithoutKey(result, server);
  });

  it('from a provider of the user file with a baseUrl and an apiKeyEnv that is not set', async () => {
    const { server, folder } = await answered();
    const configHome = join(folder.path, 'config');
    mkdirSync(join(configHome, 'turnloom'), { recursive: true });
    writeFileSync(join(configHome, 'turnloom', 'config.json'), JSON.stringify({ provider: 'ollama', providers: { ollama: { kind: 'openai-chat', baseUrl: server.baseURL, apiKeyEnv: 'OLLAMA_KEY', model: 'qwen3' } } }));
    const workspace = join(folder.path, 'workspace');
    mkdirSync(workspace);
    const result = await run(['run', 'hello', '--cwd', workspace, '--approve', 'deny', '--json'], { cwd: workspace, env: { XDG_CONFIG_HOME: configHome } });
    expectAnsweredWithoutKey(result, server);
    expect((server.requests[0]!.body as { model: string }).model).toBe('qwen3');
  });

  it('but OpenAI’s own server still needs the key, and says so', async () => {
    const folder = plainFolder('turnloom-keyless-');
    later(() => folder.remove());
    const result = await run(['run', 'hello', '--cwd', folder.path, '--provider', 'openai-chat'], { cwd: folder.path, env: { OPENAI_BASE_URL: 'https://api.openai.com/v1', XDG_CONFIG_HOME: join(folder.path, 'config') } });
    expect(result.code, shown(result)).toBe(2);
    expect(result.stderr.trim()).toMatch(/^turnloom: run: provider "openai-chat" is not configured: it needs OPENAI_API_KEY \(/);
  });
});
