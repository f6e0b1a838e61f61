import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type ChartLayout, type ChartShape, layoutChart, layoutCharts } from '../../inspector/chartLayout.ts';
import { lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';

type Box = { x: number; y: number; width: number; height: number };

// The expectations come from XState's own state nodes, not from the config the layout reads.
const pathOf = (node: AnyStateNode) => node.path.join('.');
const childrenOf = (node: AnyStateNode) => Object.values(node.states) as AnyStateNode[];
const allNodes = (node: AnyStateNode): AnyStateNode[] => childrenOf(node).flatMap((child) => [child, ...allNodes(child)]);

function expectedEdges(machine: AnyStateMachine): string[] {
  const edges = allNodes(machine.root).flatMap((source) =>
    [...source.transitions].flatMap(([event, transitions]) =>
      transitions.flatMap((transition) => (transition.target ?? [source]).map((target) => `${pathOf(source)} --${event}--> ${pathOf(target)}`)),
    ),
  );
  return [...new Set(edges)].sort();
}

const inside = (inner: Box, outer: Box) =>
  inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height;
const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
/** Whether a point lies on the border of a box, within half a pixel (coordinates are rounded to tenths). */
const onBorder = (p: { x: number; y: number }, b: Box) => {
  const within = p.x >= b.x - 0.5 && p.x <= b.x + b.width + 0.5 && p.y >= b.y - 0.5 && p.y <= b.y + b.height + 0.5;
  const edge = Math.min(Math.abs(p.x - b.x), Math.abs(p.x - b.x - b.width), Math.abs(p.y - b.y), Math.abs(p.y - b.y - b.height));
  return within && edge <= 0.5;
};

const names = Object.keys(lifecycleMachines) as LifecycleMachineName[];

/** The widest a fitted chart may be: the page's chart column at a 1,400 px window, so it shows whole at full size. */
const FITTED_MAX_WIDTH = 800;

for (const [name, shape] of names.flatMap((n) => (['full', 'fitted'] as ChartShape[]).map((sh) => [n, sh] as const))) {
  const machine: AnyStateMachine = lifecycleMachines[name].machine;
  const layout: ChartLayout = layoutChart(name, shape);
  const nodes = allNodes(machine.root);
  const byPath = new Map(layout.states.map((state) => [state.path, state]));
  // A compound's name is drawn at its top left in 11.5px monospace, within its first 20px.
  const titles = layout.states.filter((s) => s.compound).map((s) => ({ path: s.path, x: s.x, y: s.y, width: s.name.length * 7.4 + 12, height: 20 }));

  describe(`${name} chart layout, ${shape}`, () => {
    it('has every state exactly once, parents first, with positive size', () => {
      expect(layout.machine).toBe(name);
      expect(layout.states.map((s) => s.path).sort()).toEqual(nodes.map(pathOf).sort());
      expect(new Set(layout.states.map((s) => s.path)).size).toBe(layout.states.length);
      for (const [index, state] of layout.states.entries()) {
        expect(state.width, state.path).toBeGreaterThan(0);
        expect(state.height, state.path).toBeGreaterThan(0);
        if (state.parent) expect(layout.states.findIndex((s) => s.path === state.parent), state.path).toBeLessThan(index);
      }
      expect(layout.width).toBeGreaterThan(0);
      expect(layout.height).toBeGreaterThan(0);
    });

    it("carries each state's name, parent, kind and description", () => {
      for (const node of nodes) {
        const state = byPath.get(pathOf(node))!;
        expect(state.name).toBe(node.key);
        expect(state.parent).toBe(node.parent && node.parent !== machine.root ? pathOf(node.parent) : null);
        expect(state.compound, state.path).toBe(node.type === 'compound');
        expect(state.final, state.path).toBe(node.type === 'final');
        expect(state.initial, state.path).toBe(node.parent?.initial?.target[0] === node);
        expect(state.description, state.path).toBe(node.description ?? '');
      }
    });

    it("puts every state inside its parent's box and inside the chart", () => {
      for (const state of layout.states) {
        expect(inside(state, { x: 0, y: 0, width: layout.width, height: layout.height }), state.path).toBe(true);
        if (state.parent) expect(inside(state, byPath.get(state.parent)!), `${state.path} in ${state.parent}`).toBe(true);
      }
    });

    it("keeps leaf states apart, and off the compounds' names", () => {
      const leaves = layout.states.filter((s) => !s.compound);
      for (const [i, a] of leaves.entries()) {
        for (const b of leaves.slice(i + 1)) expect(overlap(a, b), `${a.path} / ${b.path}`).toBe(false);
        for (const title of titles) expect(overlap(a, title), `${a.path} on the name of ${title.path}`).toBe(false);
      }
    });

    it('draws every transition of the machine as one edge with its event', () => {
      // A transition on the machine itself would have no state box to start from.
      expect(machine.root.transitions.size).toBe(0);
      const drawn = layout.edges.map((e) => `${e.from} --${e.event}--> ${e.to}`).sort();
      expect(drawn).toEqual(expectedEdges(machine));
      expect(new Set(layout.edges.map((e) => e.id)).size).toBe(layout.edges.length);
    });

    it('routes each edge from the border of its source to the border of its target, label in the chart', () => {
      for (const edge of layout.edges) {
        expect(edge.points.length, edge.id).toBeGreaterThanOrEqual(2);
        for (const p of edge.points) expect(Number.isFinite(p.x) && Number.isFinite(p.y), edge.id).toBe(true);
        expect(onBorder(edge.points[0]!, byPath.get(edge.from)!), `${edge.id} starts on ${edge.from}`).toBe(true);
        expect(onBorder(edge.points.at(-1)!, byPath.get(edge.to)!), `${edge.id} ends on ${edge.to}`).toBe(true);
        expect(edge.labelX > 0 && edge.labelX < layout.width && edge.labelY > 0 && edge.labelY < layout.height, edge.id).toBe(true);
      }
    });

    if (shape === 'fitted') it('is narrow enough to show whole at full size, its labels anchored on their lines', () => {
      expect(layout.width).toBeLessThanOrEqual(FITTED_MAX_WIDTH);
      for (const edge of layout.edges) {
        const onLine = edge.points.slice(1).some((p, i) => {
          const a = edge.points[i]!;
          const cross = (p.x - a.x) * (edge.labelY - a.y) - (p.y - a.y) * (edge.labelX - a.x);
          const within = edge.labelX >= Math.min(a.x, p.x) - 1 && edge.labelX <= Math.max(a.x, p.x) + 1 && edge.labelY >= Math.min(a.y, p.y) - 1 && edge.labelY <= Math.max(a.y, p.y) + 1;
          return within && Math.abs(cross) / Math.max(Math.hypot(p.x - a.x, p.y - a.y), 1) <= 1;
        });
        expect(onLine || edge.from === edge.to, edge.id).toBe(true);
      }
    });

    if (shape === 'full') it('keeps edge labels off the leaf states and off the names of compound states', () => {
      const leaves = layout.states.filter((s) => !s.compound);
      for (const edge of layout.edges) {
        // The page draws labels at 11px monospace: about 6.6px a character, 16px high.
        const width = edge.event.length * 6.6;
        const label = { x: edge.labelX - width / 2, y: edge.labelY - 6, width, height: 12 };
        for (const box of [...leaves, ...titles]) expect(overlap(label, box), `${edge.id} label on ${box.path}`).toBe(false);
      }
    });
  });
}

describe('layoutCharts', () => {
  it('lays out the four machines in the order session, turn, part, approval', () => {
    expect(layoutCharts().map((chart) => chart.machine)).toEqual(['session', 'turn', 'part', 'approval']);
  });

  it('is deterministic: the same charts every time', () => {
    expect(JSON.stringify(layoutCharts())).toBe(JSON.stringify(layoutCharts()));
    expect(JSON.stringify(layoutCharts('fitted'))).toBe(JSON.stringify(layoutCharts('fitted')));
  });
});
