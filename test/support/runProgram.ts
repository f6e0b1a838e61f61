import { spawn } from 'node:child_process';

/** Runs a TypeScript program under tsx to its end (killed after 30 s): its exit code and its stdout. */
export async function runProgram(program: string, args: string[] = []): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', program, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(killer);
  return { code, output };
}

/** The resources in `now` that were not in `baseline`, counted by type (`process.getActiveResourcesInfo()` lists). */
export function resourcesBeyond(baseline: readonly string[], now: readonly string[] = process.getActiveResourcesInfo()): string[] {
  const left = [...baseline];
  return now.filter((resource) => {
    const index = left.indexOf(resource);
    if (index === -1) return true;
    left.splice(index, 1);
    return false;
  });
}
