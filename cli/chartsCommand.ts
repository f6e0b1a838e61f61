import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type GeneratedFile, generatedFiles } from './generatedFiles.ts';

const begin = (marker: string) => `<!-- generated:${marker}:begin (turnloom charts) -->`;
const end = (marker: string) => `<!-- generated:${marker}:end -->`;

async function readOrEmpty(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

function splice(existing: string, file: Extract<GeneratedFile, { marker: string }>): string {
  const start = existing.indexOf(begin(file.marker));
  const stop = existing.indexOf(end(file.marker));
  if (start < 0 || stop < start) {
    throw new Error(`${file.path}: markers for "${file.marker}" are missing; add ${begin(file.marker)} … ${end(file.marker)}`);
  }
  return `${existing.slice(0, start)}${begin(file.marker)}\n${file.content}${existing.slice(stop)}`;
}

/**
 * Writes the charts and the generated doc sections, or with `check` only
 * reports which of them differ from what the machines say. Returns the stale paths.
 */
export async function runCharts(root: string, check: boolean): Promise<string[]> {
  const stale: string[] = [];
  for (const file of generatedFiles()) {
    const path = join(root, file.path);
    const existing = await readOrEmpty(path);
    const wanted = 'marker' in file ? splice(existing, file) : file.content;
    if (wanted === existing) continue;
    stale.push(file.path);
    if (!check) {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, wanted);
    }
  }
  return stale;
}
