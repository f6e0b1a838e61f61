import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runProgram } from '../support/runProgram.ts';
import { tempDir } from '../support/tempDir.ts';

const program = fileURLToPath(new URL('../support/embedProgram.ts', import.meta.url));

describe('a program that embeds turnloom', () => {
  const dir = tempDir('turnloom-embed-');
  afterEach(() => dir.remove());

  it('holds no timer once its watch is closed and its server stopped, so it ends by itself', async () => {
    const { code, output } = await runProgram(program, [dir.path]);
    expect(code).toBe(0);
    const holding = JSON.parse(output.trim()) as string[];
    expect(holding.filter((resource) => resource === 'Timeout')).toEqual([]);
  });
});
