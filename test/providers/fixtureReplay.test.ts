import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayRecording } from '../../cli/replayCommand.ts';
import { expectedFrom, fixtureFiles, fixturesDir } from '../support/fixtureOracle.ts';

describe('every recorded stream replays through the real SDK, adapter, ingestion and engine', () => {
  it('has fixtures to replay', () => {
    expect(fixtureFiles.length).toBe(16);
  });

  it.each(fixtureFiles.map((fixture) => [`${fixture.protocol}/${fixture.name}`, fixture] as const))('%s', async (_name, fixture) => {
    const result = await replayRecording(fixture.path, fixture.protocol);
    const expected = expectedFrom(fixture.protocol, fixture.path);
    expect(result.attempts).toBe(expected.responses);
    if (fixture.name.startsWith('openai-error')) {
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ kind: 'quotaExceeded', message: expect.stringContaining('exceeded your current quota') });
      return;
    }
    expect(result.status).toBe('completed');
    expect(result.text).toBe(expected.text);
    expect(result.reasoning).toBe(expected.reasoning);
    expect(result.toolCalls.map(({ name, input }) => ({ name, input }))).toEqual(expected.toolCalls);
    expect(result.stopReason).toBe(expected.endsWithToolCalls ? 'toolCalls' : fixture.name.includes('refusal') ? 'refusal' : 'stop');
    expect(result.usage.input + result.usage.output).toBeGreaterThan(0);
    if (fixture.name.startsWith('duplicate-message-start')) {
      expect(result.diagnostics).toEqual([expect.objectContaining({ machine: 'turn', state: 'running.streaming', event: 'response.started' })]);
    } else {
      expect(result.diagnostics).toEqual([]);
    }
  });

  it('reads the corrected input count from message_delta', async () => {
    const result = await replayRecording(`${fixturesDir}anthropic/anthropic-message-delta-input-tokens.chunks.txt`, 'anthropic');
    expect(result.usage).toMatchObject({ input: 61, output: 2 });
  });

  it('keeps reasoning token and cache counts', async () => {
    const result = await replayRecording(`${fixturesDir}openai-chat/deepseek-tool-call.chunks.txt`, 'openai-chat');
    expect(result.usage).toMatchObject({ reasoning: 39, cacheRead: 320 });
  });

  it('prints one JSON object from `turnloom replay --json`', () => {
    const bin = fileURLToPath(new URL('../../bin/turnloom.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [bin, 'replay', `${fixturesDir}anthropic/anthropic-json-tool.1.chunks.txt`, '--provider', 'anthropic', '--json'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'toolCalls', toolCalls: [{ name: 'json', input: { elements: [{ location: 'San Francisco' }] } }] });
    expect(Object.keys(result)).toEqual(expect.arrayContaining(['status', 'text', 'reasoning', 'toolCalls', 'stopReason', 'usage', 'diagnostics']));
  });
});

describe('streams the recordings do not cover', () => {
  it('keeps every run of reasoning and text when a Chat Completions stream alternates between them', async () => {
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'turnloom-alt-'));
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
    const file = join(dir, 'alternating.chunks.txt');
    writeFileSync(
      file,
      [chunk({ role: 'assistant', reasoning_content: 'think A. ' }), chunk({ content: 'Answer 1. ' }), chunk({ reasoning_content: 'think B. ' }), chunk({ content: 'Answer 2.' }), chunk({}, 'stop')].join('\n'),
    );
    const result = await replayRecording(file, 'openai-chat');
    rmSync(dir, { recursive: true, force: true });
    expect(result).toMatchObject({ status: 'completed', reasoning: 'think A. think B. ', text: 'Answer 1. Answer 2.', diagnostics: [] });
  });
});
