import { describe, expect, it } from 'vitest';
import { LazyProvider, ScriptedProvider } from '../../adapters/providers/index.ts';
import type { ProviderEvent, ProviderRequest } from '../../domain/index.ts';
import { providersFromEnvironment } from '../../cli/providerRegistry.ts';

const request: ProviderRequest = { model: null, system: null, messages: [{ role: 'user', content: 'hi' }], tools: [] } as unknown as ProviderRequest;

async function collect(stream: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('LazyProvider', () => {
  it('loads its adapter on the first call, once, and streams what it streams', async () => {
    let loads = 0;
    const lazy = new LazyProvider('scripted', async () => {
      loads += 1;
      return new ScriptedProvider({ steps: [[{ text: 'loaded late' }]] });
    });
    expect(loads).toBe(0);
    expect(await lazy.startSession()).toEqual({ providerSessionId: null });
    expect(loads).toBe(1);
    const events = await collect(lazy.stream(request, new AbortController().signal));
    expect(events.filter((event) => event.type === 'text.delta').map((event) => (event as { text: string }).text).join('')).toBe('loaded late');
    await collect(lazy.stream(request, new AbortController().signal));
    expect(loads).toBe(1);
  });

  it('tries a failed load again on the next call, and the call fails with the load’s error', async () => {
    let attempt = 0;
    const lazy = new LazyProvider('flaky', async () => {
      attempt += 1;
      if (attempt === 1) throw new Error('cannot load the SDK');
      return new ScriptedProvider({ steps: [[{ text: 'second time' }]] });
    });
    await expect(collect(lazy.stream(request, new AbortController().signal))).rejects.toThrow('cannot load the SDK');
    expect((await collect(lazy.stream(request, new AbortController().signal))).length).toBeGreaterThan(0);
    expect(attempt).toBe(2);
  });

  it('is what a key in the environment gives: the SDK providers are there, named, but not loaded until called', async () => {
    const setup = await providersFromEnvironment({ OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant-test' });
    expect(Object.keys(setup.providers)).toEqual(['scripted', 'anthropic', 'openai-chat', 'openai-responses']);
    for (const name of ['anthropic', 'openai-chat', 'openai-responses']) {
      expect(setup.providers[name]).toBeInstanceOf(LazyProvider);
      expect(setup.providers[name]!.name).toBe(name);
    }
    expect(setup.defaultProvider.name).toBe('anthropic');
  });
});
