import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FunctionTools, WorkspaceTools, tool } from '../../adapters/tools/index.ts';
import type { ToolCallContext } from '../../adapters/tools/index.ts';
import { InProcessHub } from '../../bus/index.ts';
import { ScriptedProvider } from '../../adapters/providers/index.ts';
import { Worker } from '../../services/worker/worker.ts';

const context = (signal = new AbortController().signal): ToolCallContext => ({ threadId: 'thr_1', turnId: 'turn_1', callId: 'call-1', signal, workspace: null });

const weather = (execute: (input: { city: string; unit: 'C' | 'F' }, context: ToolCallContext) => unknown = ({ city, unit }) => `${city}: 21 °${unit}`) =>
  tool({
    name: 'weather',
    description: 'The weather in a city now.',
    parameters: z.object({ city: z.string().min(1), unit: z.enum(['C', 'F']).default('C') }),
    execute,
  });

describe('tool(): a tool of the program’s own', () => {
  it('shows the model its parameters as JSON Schema, from the Zod object’s input (a field with a default is not required)', () => {
    const made = weather();
    expect(made).toMatchObject({ type: 'function', name: 'weather', description: 'The weather in a city now.' });
    expect(made.parameters).toEqual({
      type: 'object',
      properties: { city: { type: 'string', minLength: 1 }, unit: { type: 'string', enum: ['C', 'F'], default: 'C' } },
      required: ['city'],
    });
    expect(made.parameters).not.toHaveProperty('$schema');
  });

  it('gives execute the parsed input (defaults and transforms applied) and the call’s context', async () => {
    const seen: unknown[] = [];
    const made = tool({
      name: 'count',
      description: 'Counts.',
      parameters: z.object({ n: z.string().transform(Number), step: z.number().default(1) }),
      execute: (input, where) => {
        seen.push(input, where.callId, where.threadId);
        return input.n + input.step;
      },
    });
    expect(await made.invoke({ n: '41' }, context())).toEqual({ output: '42', isError: false });
    expect(seen).toEqual([{ n: 41, step: 1 }, 'call-1', 'thr_1']);
  });

  it('sends a string as it is, any other value as JSON, nothing as an empty result, and what is not JSON as an error', async () => {
    expect(await weather(() => ({ temperature: 21, sky: ['clear'] })).invoke({ city: 'Oslo' }, context())).toEqual({ output: '{"temperature":21,"sky":["clear"]}', isError: false });
    expect(await weather(() => undefined).invoke({ city: 'Oslo' }, context())).toEqual({ output: '', isError: false });
    expect(await weather(() => null).invoke({ city: 'Oslo' }, context())).toEqual({ output: 'null', isError: false });
    expect(await weather(() => 10n).invoke({ city: 'Oslo' }, context())).toEqual({ output: 'weather returned a value that is not JSON (bigint)', isError: true });
  });

  it('a bad input never reaches execute: the model reads what was wrong', async () => {
    let ran = 0;
    const made = weather(() => ran++);
    expect(await made.invoke({ city: '', unit: 'K' }, context())).toEqual({ output: expect.stringMatching(/^invalid input for weather: city: .+; unit: .+/), isError: true });
    expect(await made.invoke({ invalidJson: '{"city": "Os' }, context())).toEqual({ output: 'invalid input for weather: the arguments were not valid JSON: {"city": "Os', isError: true });
    expect(await made.invoke(undefined, context())).toEqual({ output: expect.stringMatching(/^invalid input for weather: city: /), isError: true });
    expect(ran).toBe(0);
  });

  it('a thrown error or a rejection is an error result the model reads; after an interrupt it says so', async () => {
    expect(await weather(() => { throw new Error('the weather service is down'); }).invoke({ city: 'Oslo' }, context())).toEqual({ output: 'weather failed: the weather service is down', isError: true });
    expect(await weather(async () => Promise.reject(new Error('timed out'))).invoke({ city: 'Oslo' }, context())).toEqual({ output: 'weather failed: timed out', isError: true });
    const stop = new AbortController();
    const waiting = weather((_input, where) => new Promise((_resolve, reject) => where.signal.addEventListener('abort', () => reject(new Error('gave up'))))).invoke({ city: 'Oslo' }, context(stop.signal));
    stop.abort();
    expect(await waiting).toEqual({ output: 'interrupted', isError: true });
    let ran = 0;
    expect(await weather(() => ran++).invoke({ city: 'Oslo' }, context(AbortSignal.abort()))).toEqual({ output: 'interrupted', isError: true });
    expect(ran).toBe(0);
  });

  it('asks first unless told otherwise: kind defaults to command, may be fixed, or decided from the input; a bad input asks nobody', () => {
    expect(weather().kindOf({ city: 'Oslo' })).toBe('command');
    const lookup = tool({ name: 'lookup', description: 'Looks up.', parameters: z.object({ q: z.string() }), kind: 'read', execute: () => '' });
    expect(lookup.kindOf({ q: 'x' })).toBe('read');
    const notes = tool({ name: 'notes', description: 'Reads or writes notes.', parameters: z.object({ write: z.string().optional() }), kind: (input) => (input.write === undefined ? 'read' : 'edit'), execute: () => '' });
    expect(notes.kindOf({})).toBe('read');
    expect(notes.kindOf({ write: 'hello' })).toBe('edit');
    expect(weather().kindOf({ city: 42 })).toBe('read');
  });

  it('refuses a definition the model could not be shown, with a clear TypeError', () => {
    const execute = () => '';
    expect(() => tool({ name: 'has space', description: 'x', parameters: z.object({}), execute })).toThrow(new TypeError('tool("has space"): `name` must be 1 to 64 letters, digits, "_" or "-"'));
    expect(() => tool({ name: 'x'.repeat(65), description: 'x', parameters: z.object({}), execute })).toThrow(TypeError);
    expect(() => tool({ name: 'empty', description: ' ', parameters: z.object({}), execute })).toThrow(/`description` must say what the tool does/);
    expect(() => tool({ name: 'str', description: 'x', parameters: z.string() as unknown as z.ZodObject, execute })).toThrow(/`parameters` must be a Zod object/);
    expect(() => tool({ name: 'when', description: 'x', parameters: z.object({ at: z.date() }), execute })).toThrow(/tool\("when"\): its parameters cannot be shown to the model as JSON Schema/);
    expect(() => tool({ name: 'kind', description: 'x', parameters: z.object({}), execute, kind: 'write' as 'edit' })).toThrow(/`kind` must be read, edit, command/);
  });
});

describe('FunctionTools: a worker’s own tools beside its executors', () => {
  const workspace = new WorkspaceTools({ root: process.cwd(), ripgrep: null });

  it('refuses names that clash with a workspace tool, with `task`, or with each other; and entries tool() did not make', () => {
    const named = (name: string) => tool({ name, description: 'x', parameters: z.object({}), execute: () => '' });
    expect(() => new FunctionTools([named('read')], [workspace])).toThrow(/tools: "read" is already the name of one of the worker's tools \(read, write, edit, list, glob, grep, bash\)/);
    expect(() => new FunctionTools([named('task')], [])).toThrow(/"task" is the name of turnloom's own tool for sub-agents/);
    expect(() => new FunctionTools([named('twice'), named('twice')], [workspace])).toThrow('tools: two tools are named "twice"');
    expect(() => new FunctionTools([{ name: 'raw' } as never], [])).toThrow(/every entry must be made by tool\(\)/);
    expect(new FunctionTools([named('fine')], [workspace]).size).toBe(1);
  });

  it('runs a call with its turn’s context, classifies it by its kind with the tool’s name as subject, and takes only its own calls', async () => {
    const seen: ToolCallContext[] = [];
    const own = new FunctionTools([weather((input, where) => (seen.push(where), input.city))], [workspace]).forTurn({ threadId: 'thr_9', turnId: 'turn_9', workspace: '/w' });
    expect(own.specs().map((spec) => spec.name)).toEqual(['weather']);
    expect(own.handles?.({ callId: 'c', name: 'read', input: {} })).toBe(false);
    expect(own.classify({ callId: 'c', name: 'weather', input: { city: 'Oslo' } })).toEqual({ kind: 'command', subject: 'weather' });
    expect(await own.execute({ callId: 'c7', name: 'weather', input: { city: 'Oslo' } }, new AbortController().signal)).toEqual({ output: 'Oslo', isError: false });
    expect(seen).toEqual([expect.objectContaining({ threadId: 'thr_9', turnId: 'turn_9', callId: 'c7', workspace: '/w' })]);
    // Validated before anybody is asked: a good input passes, a bad one and an unknown name say why.
    expect(own.validate?.({ callId: 'c8', name: 'weather', input: { city: 'Oslo' } })).toBeNull();
    expect(own.validate?.({ callId: 'c9', name: 'weather', input: { city: '' } })).toMatch(/^invalid input for weather: city: /);
    expect(own.validate?.({ callId: 'c10', name: 'forecast', input: {} })).toBe('no tool named forecast');
  });

  it('a Worker given clashing tools refuses at construction', () => {
    const bus = new InProcessHub().connect();
    const clash = tool({ name: 'grep', description: 'x', parameters: z.object({}), execute: () => '' });
    expect(() => new Worker({ bus, tools: [workspace, clash], adapterFor: () => new ScriptedProvider() })).toThrow(/"grep" is already the name/);
  });
});
