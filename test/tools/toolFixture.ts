import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolCall, ToolResult } from '../../domain/index.ts';
import { WorkspaceTools, type WorkspaceToolsOptions } from '../../adapters/tools/index.ts';

/** Temp folders made by a test, removed by `removeAll` in its afterEach. */
export class TempFolders {
  private readonly made: string[] = [];

  make(prefix = 'turnloom-tools-'): string {
    const folder = mkdtempSync(path.join(tmpdir(), prefix));
    this.made.push(folder);
    return folder;
  }

  removeAll(): void {
    for (const folder of this.made.splice(0)) rmSync(folder, { recursive: true, force: true });
  }
}

/** Writes `files` (relative path → content) under `root`, making folders as needed. */
export function writeTree(root: string, files: Record<string, string | Buffer>): void {
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
}

export const toolCall = (name: string, input: unknown): ToolCall => ({ callId: 'call-1', name, input });

/** Runs one call to completion with a signal nobody aborts. */
export function run(tools: WorkspaceTools, name: string, input: unknown): Promise<ToolResult> {
  return tools.execute(toolCall(name, input), new AbortController().signal);
}

export const toolsAt = (root: string, options: Omit<WorkspaceToolsOptions, 'root'> = {}): WorkspaceTools => new WorkspaceTools({ root, ...options });
