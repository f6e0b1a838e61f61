import type { RunFailure } from './embeddedRun.ts';

const keyOf: Record<string, string> = { anthropic: 'ANTHROPIC_API_KEY', 'openai-chat': 'OPENAI_API_KEY', 'openai-responses': 'OPENAI_API_KEY' };
const urlOf: Record<string, { variable: string; fallback: string }> = {
  anthropic: { variable: 'ANTHROPIC_BASE_URL', fallback: 'https://api.anthropic.com' },
  'openai-chat': { variable: 'OPENAI_BASE_URL', fallback: 'https://api.openai.com/v1' },
  'openai-responses': { variable: 'OPENAI_BASE_URL', fallback: 'https://api.openai.com/v1' },
};

/** What a person can do about a failed turn, by the kind of failure and the provider it ran on; `null` when nothing useful can be said. */
export function failureHint(failure: RunFailure, env: NodeJS.ProcessEnv = process.env): string | null {
  const key = keyOf[failure.provider];
  const url = urlOf[failure.provider];
  switch (failure.kind) {
    case 'authentication':
      return key ? `check ${key}: the provider refused it` : 'check the provider’s credentials';
    case 'connection': {
      if (!url) return 'check the network, then run again';
      const at = env[url.variable] || url.fallback;
      return `is the server at ${at} running and reachable?${env[url.variable] ? ` (from ${url.variable})` : ` (set ${url.variable} to use another)`}`;
    }
    case 'rateLimit':
    case 'overloaded':
      return 'the provider is busy or limits this key: wait a little, then continue the thread';
    case 'quotaExceeded':
      return 'the account has no quota left: check its billing or plan';
    case 'contextOverflow':
      return 'the conversation no longer fits the model: start a new thread, or leave compaction on';
    case 'invalidRequest':
      return `the provider refused the request: check --model${failure.provider === 'openai-chat' ? ' (and whether the server supports tools)' : ''}`;
    default:
      return null;
  }
}
