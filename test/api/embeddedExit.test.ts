import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../support/tempDir.ts';

const program = fileURLToPath(new URL('../support/embedProgram.ts', import.meta.url));

describe('a program that embeds turnloom', () => {
  const dir = tempDir('turnloom-embed-');
  afterEach(() => dir.remove());

  it('holds no timer once its watch is closed and its server stopped, so it ends by itself', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', program, dir.path], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(killer);
    expect(code).toBe(0);
    const holding = JSON.parse(output.trim()) as string[];
    expect(holding.filter((resource) => resource === 'Timeout')).toEqual([]);
  });
});
