import { type AnyStateMachine, type StateValue, createActor } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { describe, expect, it } from 'vitest';
import { IllegalTransition } from '../../domain/index.ts';
import { lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';
import { stateName, strictSend } from '../../services/index.ts';
import { sampleEvents, sampleInputs } from './sampleEvents.ts';

interface ChartNode {
  on?: Record<string, unknown>;
  states?: Record<string, ChartNode>;
}

/** Reads the JSON chart, not XState: the chart is the spec the actor must match. */
function chartAccepts(root: ChartNode, value: StateValue, eventType: string): boolean {
  const defines = (node: ChartNode) => Boolean(node.on && eventType in node.on);
  const walk = (node: ChartNode, v: StateValue): boolean => {
    if (defines(node)) return true;
    if (typeof v === 'string') return defines(node.states![v]!);
    return Object.entries(v).some(([key, child]) => walk(node.states![key]!, child as StateValue));
  };
  return walk(root, value);
}

function chartEventTypes(node: ChartNode): string[] {
  return [...Object.keys(node.on ?? {}), ...Object.values(node.states ?? {}).flatMap(chartEventTypes)];
}

function leafPaths(node: ChartNode, prefix: string[] = []): string[] {
  const children = Object.entries(node.states ?? {});
  if (children.length === 0) return [prefix.join('.')];
  return children.flatMap(([key, child]) => leafPaths(child, [...prefix, key]));
}

function reachableSnapshots(name: LifecycleMachineName) {
  const machine: AnyStateMachine = lifecycleMachines[name].machine;
  const events = Object.values(sampleEvents[name]);
  const paths = getShortestPaths(machine, {
    events,
    input: sampleInputs[name],
    serializeState: (snapshot) => JSON.stringify(snapshot.value),
  });
  return paths.map((path) => path.state);
}

for (const name of Object.keys(lifecycleMachines) as LifecycleMachineName[]) {
  const machine: AnyStateMachine = lifecycleMachines[name].machine;
  const chart = JSON.parse(JSON.stringify(machine.config)) as ChartNode;
  const eventTypes = Object.keys(sampleEvents[name]);
  const snapshots = reachableSnapshots(name);
  const pairs = snapshots.length * eventTypes.length;

  describe(`${name} machine: ${snapshots.length} reachable states × ${eventTypes.length} event types = ${pairs} pairs`, () => {
    it('declares exactly the event types its chart uses, each described', () => {
      expect([...new Set(chartEventTypes(chart))].sort()).toEqual([...eventTypes].sort());
      expect(Object.keys(lifecycleMachines[name].events).sort()).toEqual([...eventTypes].sort());
    });

    it('reaches every leaf state of its chart', () => {
      const reached = new Set(snapshots.map((snapshot) => stateName(snapshot.value)));
      expect([...reached].sort()).toEqual(leafPaths(chart).sort());
    });

    it(`accepts an event exactly when the chart defines it, and a rejection changes nothing (${pairs} pairs)`, () => {
      let accepted = 0;
      for (const snapshot of snapshots) {
        for (const eventType of eventTypes) {
          const persisted = machine.getPersistedSnapshot(snapshot);
          const actor = createActor(machine, { snapshot: persisted, input: sampleInputs[name] }).start();
          const event = sampleEvents[name][eventType as keyof (typeof sampleEvents)[typeof name]];
          const expected = chartAccepts(chart, snapshot.value, eventType);
          let error: unknown;
          try {
            strictSend(actor, event);
          } catch (caught) {
            error = caught;
          }
          const where = `${name} in ${stateName(snapshot.value)} given ${eventType}`;
          if (expected) {
            expect(error, where).toBeUndefined();
            accepted += 1;
          } else {
            expect(error, where).toBeInstanceOf(IllegalTransition);
            expect((error as IllegalTransition).details, where).toEqual({
              machine: name,
              state: stateName(snapshot.value),
              event: eventType,
            });
            expect(actor.getPersistedSnapshot(), where).toEqual(persisted);
          }
          actor.stop();
        }
      }
      // Not vacuous: both outcomes occur.
      expect(accepted).toBeGreaterThan(0);
      expect(accepted).toBeLessThan(pairs);
    });
  });
}
