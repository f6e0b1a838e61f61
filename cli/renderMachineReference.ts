import type { AnyStateMachine, AnyStateNode } from 'xstate';

function allNodes(node: AnyStateNode): AnyStateNode[] {
  return (Object.values(node.states) as AnyStateNode[]).flatMap((child) => [child, ...allNodes(child)]);
}

/**
 * A Markdown reference of one machine: every state and every event, each with
 * the sentence on why it exists, taken from the machine itself so it cannot
 * drift from the code.
 */
export function renderMachineReference(
  name: string,
  machine: AnyStateMachine,
  eventDescriptions: Readonly<Record<string, string>>,
): string {
  const nodes = allNodes(machine.root);
  const acceptedIn = new Map<string, string[]>();
  for (const node of nodes) {
    for (const eventType of node.transitions.keys()) {
      acceptedIn.set(eventType, [...(acceptedIn.get(eventType) ?? []), node.path.join('.')]);
    }
  }
  const lines = [
    `### ${name}`,
    '',
    machine.root.description ?? '',
    '',
    `Chart: [\`docs/charts/${name}.mmd\`](charts/${name}.mmd) · definition: [\`docs/charts/${name}.json\`](charts/${name}.json)`,
    '',
    '| state | why it exists |',
    '|---|---|',
    ...nodes.map((node) => `| \`${node.path.join('.')}\`${node.type === 'final' ? ' (final)' : ''} | ${node.description ?? ''} |`),
    '',
    '| event | accepted in | why it exists |',
    '|---|---|---|',
    ...Object.entries(eventDescriptions).map(
      ([type, why]) => `| \`${type}\` | ${(acceptedIn.get(type) ?? []).map((s) => `\`${s}\``).join(', ')} | ${why} |`,
    ),
    '',
  ];
  return lines.join('\n');
}
