import dagre, { type Edge, type EdgeLabel, type GraphLabel, type NodeLabel } from '@dagrejs/dagre';
import { lifecycleMachines, type LifecycleMachineName } from '../machines/index.ts';

/** A lifecycle machine laid out for drawing: the shape `/charts.json` serves (docs/inspector.md). */
export interface ChartLayout {
  machine: LifecycleMachineName;
  description: string;
  width: number;
  height: number;
  /** Every state, parents before their children; x, y is the top-left corner. */
  states: Array<{
    path: string;
    name: string;
    parent: string | null;
    compound: boolean;
    final: boolean;
    initial: boolean;
    description: string;
    x: number;
    y: number;
    width: number;
    height: number;
  }>;
  /** One per (source, event); `from`/`to` are state paths; points are the drawn polyline, label at labelX, labelY. */
  edges: Array<{ id: string; from: string; to: string; event: string; points: Point[]; labelX: number; labelY: number }>;
}

type Point = { x: number; y: number };
type Box = { x: number; y: number; width: number; height: number };
type ChartState = ChartLayout['states'][number];

/** The JSON of a machine config, as far as a chart needs it. */
interface ConfigNode {
  id?: string;
  type?: string;
  initial?: string;
  description?: string;
  on?: Record<string, TransitionConfig | TransitionConfig[]>;
  states?: Record<string, ConfigNode>;
}
type TransitionConfig = string | { target?: string | string[] } | undefined;

// The page draws state names at 12px and event labels at 11px in a monospace
// font, so widths can be estimated from character counts without measuring.
const STATE_CHAR = 7.4;
const LABEL_CHAR = 6.8;
const STATE_HEIGHT = 30;
const LABEL_HEIGHT = 16;
/** Room left of an initial state for the page's start dot and its arrow. */
const INITIAL_MARK = 18;
/** Room above a compound's children for its name. */
const TITLE = 22;
/** Self-loops stick out of their state this far, towards their label. */
const LOOP_REACH = 14;
const MARGIN = 12;
const ANCHOR = '\u0000anchor';

const dotted = (path: string[]) => path.join('.');

function targetsOf(transition: TransitionConfig): string[] | null {
  if (transition === undefined) return null;
  if (typeof transition === 'string') return [transition];
  if (transition.target === undefined) return null;
  return Array.isArray(transition.target) ? transition.target : [transition.target];
}

interface Walked {
  states: ChartState[];
  edges: Array<{ id: string; from: string; to: string; event: string }>;
}

function walkConfig(machineId: string, root: ConfigNode): Walked {
  const states: ChartState[] = [];
  const byId = new Map<string, string[]>();
  const nodes: Array<{ path: string[]; node: ConfigNode }> = [];
  const visit = (node: ConfigNode, path: string[], parent: ConfigNode) => {
    const key = path[path.length - 1]!;
    const children = Object.entries(node.states ?? {});
    states.push({
      path: dotted(path),
      name: key,
      parent: path.length > 1 ? dotted(path.slice(0, -1)) : null,
      compound: children.length > 0,
      final: node.type === 'final',
      initial: parent.initial === key,
      description: node.description ?? '',
      x: 0,
      y: 0,
      width: 0,
      height: 0,
    });
    nodes.push({ path, node });
    byId.set(node.id ?? [machineId, ...path].join('.'), path);
    for (const [childKey, child] of children) visit(child, [...path, childKey], node);
  };
  for (const [key, child] of Object.entries(root.states ?? {})) visit(child, [key], root);

  // XState's target syntax: `#id.rest` by id, `.child` below the source, anything else a sibling path.
  const resolve = (source: string[], target: string): string => {
    if (target.startsWith('#')) {
      const [id, ...rest] = target.slice(1).split('.');
      for (let cut = rest.length; cut >= 0; cut--) {
        const base = byId.get([id, ...rest.slice(0, cut)].join('.'));
        if (base) return dotted([...base, ...rest.slice(cut)]);
      }
      throw new Error(`${machineId}: unknown target ${target}`);
    }
    if (target.startsWith('.')) return dotted([...source, ...target.slice(1).split('.')]);
    return dotted([...source.slice(0, -1), ...target.split('.')]);
  };

  const edges: Walked['edges'] = [];
  for (const { path, node } of nodes) {
    const from = dotted(path);
    for (const [event, config] of Object.entries(node.on ?? {})) {
      const list = Array.isArray(config) ? config : [config];
      // A targetless transition keeps the state: it is drawn as a loop, as `turnloom charts` draws it.
      const targets = [...new Set(list.flatMap((t) => targetsOf(t)?.map((target) => resolve(path, target)) ?? [from]))];
      for (const to of targets) {
        edges.push({ id: targets.length > 1 ? `${from}:${event}:${to}` : `${from}:${event}`, from, to, event });
      }
    }
  }
  return { states, edges };
}

/** Where the segment from `inside` towards `outside` crosses the border of `box` (`inside` is within it). */
function borderPoint(box: Box, inside: Point, outside: Point): Point {
  const dx = outside.x - inside.x;
  const dy = outside.y - inside.y;
  let t = 1;
  if (dx > 0) t = Math.min(t, (box.x + box.width - inside.x) / dx);
  if (dx < 0) t = Math.min(t, (box.x - inside.x) / dx);
  if (dy > 0) t = Math.min(t, (box.y + box.height - inside.y) / dy);
  if (dy < 0) t = Math.min(t, (box.y - inside.y) / dy);
  return { x: inside.x + dx * t, y: inside.y + dy * t };
}

const contains = (box: Box, p: Point) => p.x > box.x && p.x < box.x + box.width && p.y > box.y && p.y < box.y + box.height;
const center = (box: Box): Point => ({ x: box.x + box.width / 2, y: box.y + box.height / 2 });

/**
 * Fits a routed polyline to the drawn boxes: dagre routes to anchors inside
 * compounds and to the padded boxes of initial states, and the room made for
 * compound titles may have moved a box away from its edge's end. The line is
 * cut where it enters a box, or continued to a box it stops short of.
 */
function clip(points: Point[], source: Box, target: Box): Point[] {
  let start = 0;
  while (start < points.length - 1 && contains(source, points[start + 1]!)) start++;
  let end = points.length - 1;
  while (end > start + 1 && contains(target, points[end - 1]!)) end--;
  const path = points.slice(start, end + 1);
  if (path.length < 2) return [borderPoint(source, center(source), center(target)), borderPoint(target, center(target), center(source))];
  const n = path.length;
  const head = contains(source, path[0]!) ? [borderPoint(source, path[0]!, path[1]!)] : [borderPoint(source, center(source), path[0]!), path[0]!];
  const tail = contains(target, path[n - 1]!) ? [borderPoint(target, path[n - 1]!, path[n - 2]!)] : [path[n - 1]!, borderPoint(target, center(target), path[n - 1]!)];
  return dedupe([...head, ...path.slice(1, -1), ...tail]);
}

/** Drops points that repeat the one before (a line already ending on the border). */
function dedupe(points: Point[]): Point[] {
  return points.filter((p, i) => i === 0 || Math.hypot(p.x - points[i - 1]!.x, p.y - points[i - 1]!.y) > 0.05);
}

/** A rectangular loop out of one side of the box, towards the label dagre placed beside it. */
function selfLoop(box: Box, label: Point, labelSize: { width: number; height: number }): { points: Point[]; label: Point } {
  const c = center(box);
  const horizontal = Math.abs(label.x - c.x) * box.height > Math.abs(label.y - c.y) * box.width;
  // Worked out along one axis (`along`: out of the box, `across`: beside it), then put back.
  const [along, across, length, depth] = horizontal ? (['x', 'y', box.width, labelSize.width / 2 + 3] as const) : (['y', 'x', box.height, labelSize.height / 2 + 2] as const);
  const at = (a: number, b: number): Point => (horizontal ? { x: a, y: b } : { x: b, y: a });
  const sign = label[along] > c[along] ? 1 : -1;
  const side = sign > 0 ? box[along] + length : box[along];
  const reach = side + sign * LOOP_REACH;
  const spread = horizontal ? Math.min(8, box.height / 4) : Math.min(14, box.width / 4);
  return {
    points: [at(side, c[across] - spread), at(reach, c[across] - spread), at(reach, c[across] + spread), at(side, c[across] + spread)],
    label: at(reach + sign * depth, c[across]),
  };
}

const round = (n: number) => Math.round(n * 10) / 10;

/**
 * `full`: left to right, room made for every edge's label (wide: the turn
 * chart is over 2,500 px). `fitted`: top to bottom with no room for labels,
 * narrow enough to show whole at full size in the page's column; the page
 * draws only a few labels there (the active states' edges), each set where
 * it does not cover another, and the rest on hover.
 */
export type ChartShape = 'full' | 'fitted';

/** The states that contain a state, outermost first. */
const ancestors = (path: string) => path.split('.').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('.'));

/** Lays out one lifecycle machine with dagre: compound states as clusters, one labelled edge per (state, event). */
export function layoutChart(name: LifecycleMachineName, shape: ChartShape = 'full'): ChartLayout {
  const labelSize = shape === 'full' ? (event: string) => ({ width: Math.round(event.length * LABEL_CHAR + 10), height: LABEL_HEIGHT }) : () => ({ width: 1, height: 1 });
  const machine = lifecycleMachines[name].machine;
  const config = JSON.parse(JSON.stringify(machine.config)) as ConfigNode;
  const { states, edges } = walkConfig(machine.id, config);
  const byPath = new Map(states.map((s) => [s.path, s]));
  const isCompound = (path: string) => byPath.get(path)!.compound;

  const g = new dagre.graphlib.Graph<GraphLabel, NodeLabel, EdgeLabel>({ compound: true, multigraph: true });
  // Left to right reads like the Mermaid charts; with every label given room, top to bottom came out no narrower and harder to follow.
  g.setGraph({ rankdir: shape === 'full' ? 'LR' : 'TB', nodesep: 16, edgesep: 10, ranksep: 22 });
  g.setDefaultEdgeLabel(() => ({}));

  for (const state of states) {
    if (state.compound) {
      g.setNode(state.path, {});
      // An invisible child as wide as the title, so a cluster is never narrower than its name.
      const title = `${state.path}\u0000title`;
      g.setNode(title, { width: state.name.length * STATE_CHAR + 16, height: 1 });
      g.setParent(title, state.path);
    } else {
      const width = Math.max(64, state.name.length * STATE_CHAR + 22) + (state.initial ? INITIAL_MARK : 0);
      g.setNode(state.path, { width, height: STATE_HEIGHT });
    }
    if (state.parent) g.setParent(state.path, state.parent);
  }

  // dagre cannot end an edge on a cluster. Entering a compound means entering
  // its initial child, so such an edge is laid out to that child (which keeps
  // the entry near it) and cut at the compound's border afterwards; an edge
  // leaving a compound as a whole starts at a tiny anchor inside it.
  const entry = (path: string): string => {
    if (!isCompound(path)) return path;
    return entry(states.find((s) => s.parent === path && s.initial)!.path);
  };
  const exit = (path: string): string => {
    if (!isCompound(path)) return path;
    const anchor = path + ANCHOR;
    if (!g.hasNode(anchor)) {
      g.setNode(anchor, { width: 1, height: 1 });
      g.setParent(anchor, path);
    }
    return anchor;
  };
  // dagre's own label dummies may land inside a compound the edge only
  // touches; the label of such an edge is a node of its own, in the innermost
  // state holding both ends, and the edge runs through it.
  const labelNode = (id: string) => `\u0000label:${id}`;
  for (const edge of edges) {
    if (edge.from === edge.to) {
      // A loop on a compound is drawn on its border without reserved room: no chart has one.
      if (!isCompound(edge.from)) g.setEdge(edge.from, edge.to, { ...labelSize(edge.event), labelpos: 'c' }, edge.id);
    } else if (!isCompound(edge.from) && !isCompound(edge.to)) {
      g.setEdge(edge.from, edge.to, { ...labelSize(edge.event), labelpos: 'c' }, edge.id);
    } else {
      const node = labelNode(edge.id);
      g.setNode(node, labelSize(edge.event));
      const toChain = ancestors(edge.to);
      const common = ancestors(edge.from).filter((p, i) => toChain[i] === p).pop();
      if (common) g.setParent(node, common);
      g.setEdge(exit(edge.from), node, { weight: 2 }, `${edge.id}:in`);
      g.setEdge(node, entry(edge.to), { weight: 2 }, `${edge.id}:out`);
    }
  }

  dagre.layout(g);

  const boxes = new Map<string, Box>();
  for (const id of g.nodes()) {
    const node = g.node(id);
    boxes.set(id, { x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height });
  }
  const routes: Array<{ points: Point[]; x?: number; y?: number }> = g.edges().map((e: Edge) => g.edge(e));

  // dagre draws a cluster's border tight around its children: grow each
  // compound (innermost first) to hold its title above them, and move
  // everything below its top edge down by as much, so nothing comes to overlap.
  for (const state of [...states].reverse()) {
    if (!state.compound) continue;
    const box = boxes.get(state.path)!;
    // dagre's own label dummies are not children, but the ones inside the box must clear the title too.
    const labelTops = routes
      .filter((r) => r.x !== undefined && r.y !== undefined && contains(box, r as Point))
      .map((r) => r.y! - labelSize('').height / 2);
    const needed = box.y + TITLE - Math.min(...g.children(state.path).map((child: string) => boxes.get(child)!.y), ...labelTops);
    if (needed <= 0) continue;
    const line = box.y + 0.5;
    for (const [id, other] of boxes) {
      const compound = byPath.get(id)?.compound ?? false;
      if (compound ? other.y >= line : other.y + other.height / 2 >= line) other.y += needed;
      else if (compound && other.y + other.height > line) other.height += needed;
    }
    for (const route of routes) {
      for (const p of route.points) if (p.y >= line) p.y += needed;
      if (route.y !== undefined && route.y >= line) route.y += needed;
    }
  }

  const drawn = new Map<string, Box>();
  for (const state of states) {
    const box = boxes.get(state.path)!;
    drawn.set(state.path, state.initial && !state.compound ? { ...box, x: box.x + INITIAL_MARK, width: box.width - INITIAL_MARK } : box);
  }

  const routed = edges.map((edge) => {
    const source = drawn.get(edge.from)!;
    const target = drawn.get(edge.to)!;
    if (edge.from === edge.to) {
      const beside = isCompound(edge.from)
        ? { x: source.x + source.width + 1, y: source.y + source.height / 2 }
        : (g.edge(edge.from, edge.to, edge.id) as Point);
      const loop = selfLoop(source, beside, labelSize(edge.event));
      return { edge, points: loop.points, label: loop.label };
    }
    if (g.hasNode(labelNode(edge.id))) {
      const node = labelNode(edge.id);
      const into = g.edge(exit(edge.from), node, `${edge.id}:in`) as { points: Point[] };
      const out = g.edge(node, entry(edge.to), `${edge.id}:out`) as { points: Point[] };
      return { edge, points: clip([...into.points, ...out.points], source, target), label: center(boxes.get(node)!) };
    }
    const route = g.edge(edge.from, edge.to, edge.id) as { points: Point[]; x: number; y: number };
    return { edge, points: clip(route.points, source, target), label: { x: route.x, y: route.y } };
  });

  // Everything drawn, moved so the chart starts at the margin.
  const extents = [
    ...[...drawn.values()].flatMap((b) => [{ x: b.x, y: b.y }, { x: b.x + b.width, y: b.y + b.height }]),
    ...routed.flatMap(({ edge, points, label }) => {
      const size = labelSize(edge.event);
      return [...points, { x: label.x - size.width / 2, y: label.y - size.height / 2 }, { x: label.x + size.width / 2, y: label.y + size.height / 2 }];
    }),
    // The start dots of initial states sit left of their boxes.
    ...states.filter((s) => s.initial && !s.compound).map((s) => ({ x: drawn.get(s.path)!.x - INITIAL_MARK, y: drawn.get(s.path)!.y })),
  ];
  const minX = Math.min(...extents.map((p) => p.x));
  const minY = Math.min(...extents.map((p) => p.y));
  const mx = (x: number) => round(x - minX + MARGIN);
  const my = (y: number) => round(y - minY + MARGIN);

  return {
    machine: name,
    description: config.description ?? '',
    width: Math.ceil(Math.max(...extents.map((p) => p.x)) - minX + 2 * MARGIN),
    height: Math.ceil(Math.max(...extents.map((p) => p.y)) - minY + 2 * MARGIN),
    states: states.map((state) => {
      const box = drawn.get(state.path)!;
      return { ...state, x: mx(box.x), y: my(box.y), width: round(box.width), height: round(box.height) };
    }),
    edges: routed.map(({ edge, points, label }) => ({
      ...edge,
      points: points.map((p) => ({ x: mx(p.x), y: my(p.y) })),
      labelX: mx(label.x),
      labelY: my(label.y),
    })),
  };
}

/** The four charts, in the order the page and `/charts.json` present them. */
export function layoutCharts(shape: ChartShape = 'full'): ChartLayout[] {
  return (['session', 'turn', 'part', 'approval'] as const).map((name) => layoutChart(name, shape));
}
