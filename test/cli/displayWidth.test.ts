import { describe, expect, it } from 'vitest';
import { cutToWidth, displayWidth, tailToWidth } from '../../cli/displayWidth.ts';
import { toolLabel } from '../../cli/run/turnProgress.ts';

describe('display width', () => {
  it('counts the columns a terminal gives: two for East Asian wide characters and emoji, one for the rest', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('日本語')).toBe(6);
    expect(displayWidth('👍🏽 ok')).toBe(5);
    expect(displayWidth('é')).toBe(1);
  });

  it('cuts to columns, not code units, never splitting a character', () => {
    expect(cutToWidth('日本語のファイル名.txt', 9)).toBe('日本語の…');
    expect(displayWidth(cutToWidth('日本語のファイル名.txt', 9))).toBeLessThanOrEqual(9);
    // A wide character that would straddle the edge is left out: 8 columns, not 9.
    expect(cutToWidth('a日本語のファイル', 9)).toBe('a日本語…');
    expect(cutToWidth('👨‍👩‍👧‍👦👨‍👩‍👧‍👦👨‍👩‍👧‍👦', 5)).toBe('👨‍👩‍👧‍👦👨‍👩‍👧‍👦…');
    expect(cutToWidth('short', 9)).toBe('short');
    expect(tailToWidth('typed 日本語の文章', 9)).toBe('…語の文章');
  });

  it("a tool call's label fits its columns whatever its script", () => {
    const label = toolLabel('read', { path: '資料/'.repeat(40) }, 20);
    expect(displayWidth(label.slice('read '.length))).toBeLessThanOrEqual(20);
    expect(label.slice('read '.length).length).toBeLessThan(20);
  });
});
