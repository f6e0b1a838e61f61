import { describe, expect, it } from 'vitest';
import { capPatch } from '../../adapters/git/capPatch.ts';

describe('capPatch', () => {
  it('leaves a patch within the limit alone', () => {
    expect(capPatch('+a\n', 3)).toEqual({ patch: '+a\n', truncated: false });
  });

  it('cuts at the limit, on its own line, without splitting a surrogate pair', () => {
    expect(capPatch('+a\n+b\n', 3)).toEqual({ patch: '+a\n[... 3 characters of diff cut ...]\n', truncated: true });
    expect(capPatch('+🎉\n', 2)).toEqual({ patch: '+\n[... 3 characters of diff cut ...]\n', truncated: true });
  });
});
