import type { AnyStateMachine, AnyStateNode } from 'xstate';

/** Mermaid ids must be unique across the diagram; the label keeps the short name. */
const nodeId = (node: AnyStateNode): string => node.path.join('_');

function isAncestorOrSelf(ancestor: AnyStateNode, node: AnyStateNode | undefined): boolean {
  for (let n = node; n; n = n.parent) if (n === ancestor) return true;
  return false;
}

/** The innermost state whose block should hold an edge, so Mermaid draws it inside the right box. */
function edgeOwner(source: AnyStateNode, target: AnyStateNode): AnyStateNode {
  let owner = source.parent;
  while (owner && !isAncestorOrSelf(owner, target.parent)) owner = owner.parent;
  return owner ?? source.machine.root;
}

function childrenOf(node: AnyStateNode): AnyStateNode[] {
  return Object.values(node.states) as AnyStateNode[];
}

function allNodes(node: AnyStateNode): AnyStateNode[] {
  return childrenOf(node).flatMap((child) => [child, ...allNodes(child)]);
}

/** Renders a machine as a Mermaid `stateDiagram-v2`, one edge per event. */
export function renderMermaid(machine: AnyStateMachine): string {
  const edges = new Map<AnyStateNode, string[]>();
  for (const source of allNodes(machine.root)) {
    for (const [eventType, transitions] of source.transitions) {
      for (const transition of transitions) {
        for (const target of transition.target ?? [source]) {
          const owner = edgeOwner(source, target);
          const list = edges.get(owner) ?? [];
          list.push(`${nodeId(source)} --> ${nodeId(target)}: ${eventType}`);
          edges.set(owner, list);
        }
      }
    }
  }

  const lines: string[] = ['stateDiagram-v2'];
  const block = (node: AnyStateNode, indent: string): void => {
    const initial = node.initial?.target[0];
    if (initial) lines.push(`${indent}[*] --> ${nodeId(initial)}`);
    for (const child of childrenOf(node)) {
      if (child.type === 'compound') {
        lines.push(`${indent}state "${child.key}" as ${nodeId(child)} {`);
        block(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}state "${child.key}" as ${nodeId(child)}`);
      }
    }
    lines.push(...(edges.get(node) ?? []).map((edge) => indent + edge));
    for (const child of childrenOf(node)) {
      if (child.type === 'final') lines.push(`${indent}${nodeId(child)} --> [*]`);
    }
  };
  block(machine.root, '  ');
  return `${lines.join('\n')}\n`;
}
