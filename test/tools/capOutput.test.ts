import { describe, expect, it } from 'vitest';
import { CappedOutput, capOutput } from '../../adapters/tools/capOutput.ts';

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe('capOutput', () => {
  it('leaves output within the cap alone', () => {
    expect(capOutput('short', 5)).toBe('short');
  });

  it('keeps the start and the end, and says how many characters were cut', () => {
    const text = `${'a'.repeat(500)}${'b'.repeat(500)}`;
    const capped = capOutput(text, 100);
    expect(capped.length).toBeLessThanOrEqual(100);
    const [, head, cut, tail] = /^(a+)\n\[\.\.\. (\d+) characters cut \.\.\.\]\n(b+)$/.exec(capped) ?? [];
    expect(head!.length + Number(cut) + tail!.length).toBe(1_000);
  });

  it('never splits a surrogate pair, at any cap', () => {
    const text = `x${'😀'.repeat(300)}y`;
    for (let max = 40; max < 120; max += 1) {
      const capped = capOutput(text, max);
      expect(capped.length).toBeLessThanOrEqual(max);
      expect(capped).not.toMatch(loneSurrogate);
    }
  });

  it('caps streamed output the same way while holding only its ends', () => {
    const chunks = Array.from({ length: 2_000 }, (_, index) => `${index}😀\n`);
    for (const max of [50, 51, 333]) {
      const output = new CappedOutput(max);
      for (const chunk of chunks) output.push(chunk);
      const capped = output.text(max);
      expect(capped).toBe(capOutput(chunks.join(''), max));
      expect(capped).not.toMatch(loneSurrogate);
    }
    const small = new CappedOutput(100);
    small.push('one ');
    small.push('two');
    expect(small.text(100)).toBe('one two');
  });
});
