import { lifecycleMachines } from '../machines/index.ts';
import { renderConfigJsonSchema, renderConfigReference } from '../services/config/index.ts';
import { renderMachineReference } from './renderMachineReference.ts';
import { renderMermaid } from './renderMermaid.ts';
import { renderProtocolReference } from './renderProtocolReference.ts';

/** A whole file, or the region between two markers inside a hand-written file. */
export type GeneratedFile =
  | { path: string; content: string }
  | { path: string; marker: string; content: string };

/** Everything `turnloom charts` writes, relative to the project root. */
export function generatedFiles(): GeneratedFile[] {
  const entries = Object.entries(lifecycleMachines);
  return [
    ...entries.flatMap(([name, { machine }]) => [
      { path: `docs/charts/${name}.mmd`, content: renderMermaid(machine) },
      { path: `docs/charts/${name}.json`, content: `${JSON.stringify(machine.config, null, 2)}\n` },
    ]),
    {
      path: 'docs/architecture.md',
      marker: 'machines',
      content: entries.map(([name, { machine, events }]) => renderMachineReference(name, machine, events)).join('\n'),
    },
    { path: 'docs/protocol.md', marker: 'methods', content: renderProtocolReference() },
    { path: 'docs/config.md', marker: 'config-reference', content: renderConfigReference() },
    { path: 'docs/config.schema.json', content: renderConfigJsonSchema() },
    {
      path: 'README.md',
      marker: 'turn-chart',
      content: `\`\`\`mermaid\n${renderMermaid(lifecycleMachines.turn.machine)}\`\`\`\n`,
    },
  ];
}
