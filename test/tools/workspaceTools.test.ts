import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { workspaceToolNames } from '../../adapters/tools/index.ts';
import { TempFolders, run, toolCall, toolsAt, writeTree } from './toolFixture.ts';

describe('workspace tools executor', () => {
  const folders = new TempFolders();
  let root: string;
  beforeEach(() => {
    root = folders.make();
    writeTree(root, { 'a.txt': 'alpha\n' });
  });
  afterEach(() => folders.removeAll());

  it('offers every tool with a JSON Schema generated from its validator', () => {
    const specs = toolsAt(root).specs();
    expect(specs.map((spec) => spec.name)).toEqual([...workspaceToolNames]);
    expect(workspaceToolNames).toEqual(['read', 'write', 'edit', 'list', 'glob', 'grep', 'bash']);
    for (const spec of specs) {
      expect(spec.description.length).toBeGreaterThan(10);
      expect(spec.inputSchema).not.toHaveProperty('$schema');
      expect(spec.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
    }
    const edit = specs.find((spec) => spec.name === 'edit')!;
    expect(edit.inputSchema).toMatchObject({ required: ['path', 'oldText', 'newText'], properties: { replaceAll: { type: 'boolean' } } });
  });

  it.each<[string, string, unknown, string]>([
    ['a missing field', 'edit', { path: 'a.txt', newText: 'b' }, 'invalid input for edit: oldText: expected string, received undefined'],
    ['a wrong type', 'read', { path: 'a.txt', offset: 'ten' }, 'invalid input for read: offset: expected number, received string'],
    ['an extra field', 'write', { path: 'a.txt', content: 'x', mode: 0o777 }, 'invalid input for write: Unrecognized key: "mode"'],
    ['the marker for arguments that were not JSON', 'write', { invalidJson: '{"path": "a.txt", "content": "x' }, 'invalid input for write: the arguments were not valid JSON: {"path": "a.txt", "content": "x'],
    ['no object at all', 'bash', null, 'invalid input for bash: expected object, received null'],
    ['a number out of range', 'bash', { command: 'true', timeoutMs: -1 }, 'invalid input for bash: timeoutMs: Too small: expected number to be >0'],
  ])('turns %s into an error result the model can read', async (_, name, input, output) => {
    expect(await run(toolsAt(root), name, input)).toEqual({ output, isError: true });
  });

  it('names the tools it has when asked for one it has not', async () => {
    expect(await run(toolsAt(root), 'rm', { path: 'a.txt' })).toEqual({ output: 'no tool named rm; available: read, write, edit, list, glob, grep, bash', isError: true });
    expect(await run(toolsAt(root), 'constructor', {})).toMatchObject({ isError: true });
  });

  it('never throws, whatever the input', async () => {
    const inputs: unknown[] = [undefined, null, 'read a.txt', 42, [], [1], {}, { path: {} }, { path: '\0' }, { pattern: '(' }, { invalidJson: 7 }];
    for (const name of [...workspaceToolNames, 'nope']) {
      for (const input of inputs) {
        const result = await run(toolsAt(root), name, input);
        expect(typeof result.output).toBe('string');
        expect(typeof result.isError).toBe('boolean');
        expect(() => toolsAt(root).classify(toolCall(name, input))).not.toThrow();
      }
    }
  });

  it('classifies calls as reads, edits or commands, with what they touch', () => {
    const tools = toolsAt(root);
    const classify = (name: string, input: unknown) => tools.classify(toolCall(name, input));
    expect(classify('read', { path: './src/../a.txt' })).toEqual({ kind: 'read', subject: 'a.txt' });
    expect(classify('write', { path: 'src/new.ts', content: '' })).toEqual({ kind: 'edit', subject: 'src/new.ts' });
    expect(classify('edit', { path: 'a.txt', oldText: 'a', newText: 'b' })).toEqual({ kind: 'edit', subject: 'a.txt' });
    expect(classify('list', {})).toEqual({ kind: 'read', subject: '.' });
    expect(classify('glob', { pattern: 'src/**/*.ts' })).toEqual({ kind: 'read', subject: 'src/**/*.ts' });
    expect(classify('grep', { pattern: 'x', path: 'src' })).toEqual({ kind: 'read', subject: 'src' });
    expect(classify('bash', { command: 'npm test -- --watch' })).toEqual({ kind: 'command', subject: 'npm test -- --watch' });
    expect(classify('write', { path: 'a.txt' })).toEqual({ kind: 'edit', subject: '' });
    expect(classify('bash', { invalidJson: '{' })).toEqual({ kind: 'command', subject: '' });
    expect(classify('mystery', { path: 'a.txt' })).toEqual({ kind: 'command', subject: '' });
  });

  it('runs nothing once the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const tools = toolsAt(root);
    expect(await tools.execute(toolCall('write', { path: 'a.txt', content: 'changed' }), controller.signal)).toEqual({ output: 'interrupted', isError: true });
    expect((await run(tools, 'read', { path: 'a.txt' })).output).toBe('     1\talpha\n');
  });

  it('finds ripgrep by itself: the one turnloom brings, with no rg on the PATH', async () => {
    const found = await run(toolsAt(root, { ripgrep: undefined, env: { PATH: '/nonexistent' } }), 'grep', { pattern: 'alpha' });
    expect(found).toEqual({ output: 'a.txt:1:alpha', isError: false });
  });
});
