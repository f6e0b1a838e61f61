import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** What each layer may import of ours: dependencies point one way (docs/architecture.md, *Layers*). */
const allowed: Record<string, readonly string[]> = {
  domain: ['domain'],
  machines: ['domain', 'machines'],
  bus: ['domain', 'bus'],
  protocol: ['domain', 'machines', 'bus', 'protocol'],
  lib: ['domain', 'machines', 'bus', 'protocol', 'adapters', 'services', 'client', 'lib'],
  adapters: ['domain', 'bus', 'adapters'],
  services: ['domain', 'machines', 'bus', 'protocol', 'adapters', 'services'],
  client: ['domain', 'bus', 'protocol', 'client'],
  inspector: ['domain', 'bus', 'protocol', 'client', 'machines', 'inspector'],
  cli: ['domain', 'machines', 'bus', 'protocol', 'adapters', 'services', 'client', 'inspector', 'cli'],
};

function sources(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules' && name !== 'page') walk(path);
      } else if (path.endsWith('.ts')) files.push(relative(root, path));
    }
  };
  for (const layer of Object.keys(allowed)) walk(join(root, layer));
  return files;
}

/** Each source file's imports of ours (types included), as paths from the repository root. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources()) {
    const text = readFileSync(join(root, file), 'utf8');
    const imports = [...text.matchAll(/^(?:import|export)\b[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm)].map((match) => relative(root, resolve(root, dirname(file), match[1]!)));
    graph.set(file, imports);
  }
  return graph;
}

/** Strongly connected components of more than one file: the import cycles. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('the layers', () => {
  const graph = importGraph();

  it('import only what lies below them', () => {
    const upward = [...graph].flatMap(([file, imports]) => {
      const layer = file.split('/')[0]!;
      return imports.filter((target) => !allowed[layer]!.includes(target.split('/')[0]!)).map((target) => `${file} → ${target}`);
    });
    expect(upward).toEqual([]);
  });

  it('have no import cycles (types included)', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('library code prints nothing itself: it logs through the logger port (domain/logger.ts)', () => {
    const library = ['domain', 'machines', 'bus', 'protocol', 'adapters', 'services', 'client', 'inspector'];
    const printing = [...graph.keys()]
      .filter((file) => library.includes(file.split('/')[0]!))
      .flatMap((file) =>
        readFileSync(join(root, file), 'utf8')
          .split('\n')
          .flatMap((line, index) => (/\bconsole\.(log|error|warn|info|debug|trace)\(/.test(line) ? [`${file}:${index + 1}`] : [])),
      );
    expect(printing).toEqual([]);
  });

  it('library errors name library options, never a command-line flag', () => {
    const library = ['domain', 'machines', 'bus', 'protocol', 'adapters', 'services', 'client', 'inspector', 'lib'];
    // The command line's own flags, in the text of library code (comments aside): an embedder never typed them.
    const flagInMessage = /^(?!\s*(?:\/\/|\*|\/\*)).*['`"][^'`"]*\s--(?:data|prefix|nats|nats-user|nats-creds|port|workspace|auth|script|inspect|lease-timeout|approval-timeout|max-payload|mode|approve|cwd|provider|model|thread|continue|id|env|concurrency|context-window|replicas|cluster|log-format|log-level|inbox-prefix)\b/;
    const offending = [...graph.keys()]
      .filter((file) => library.includes(file.split('/')[0]!))
      .flatMap((file) => readFileSync(join(root, file), 'utf8').split('\n').flatMap((line, index) => (flagInMessage.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])));
    expect(offending).toEqual([]);
  });

  it('the check itself sees a cycle and an upward import when there is one', () => {
    expect(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', ['a.ts']], ['c.ts', []]]))).toEqual([['a.ts', 'b.ts']]);
    expect(graph.get('services/engine/engine.ts')).toContain('domain/index.ts');
  });
});
