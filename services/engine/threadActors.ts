import type { AnyMachineSnapshot, AnyStateMachine, Snapshot } from 'xstate';
import type { PersistedActor, PersistedActorTree } from '../../domain/index.ts';
import { lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';
import { restoreMachine, startMachine, stepMachine } from '../../machines/machineStep.ts';
import { assertAccepts } from '../../machines/strictSend.ts';
import { type Delivery, actorKey } from '../../machines/routeEvent.ts';

/** One lifecycle actor: which machine it runs, its input, and the snapshot it is in. */
export interface ActorState {
  machine: LifecycleMachineName;
  id: string;
  input: Record<string, unknown>;
  snapshot: AnyMachineSnapshot;
}

const machineOf = (name: LifecycleMachineName): AnyStateMachine => lifecycleMachines[name].machine;

/**
 * The lifecycle actors of one thread: its session, its open turn, the open
 * parts and the approvals still waiting for a confirmation. Finished actors
 * leave the tree; their final state lives on in the read model.
 *
 * Each actor is its machine's snapshot, moved only by the machine's own
 * transition function after the strict `can()` check. A command's draft
 * steps copies of them once per event; once the command is durable the tree
 * adopts those very snapshots, so no event is computed twice.
 */
export class ThreadActors {
  readonly threadId: string;
  private readonly live = new Map<string, ActorState>();

  private constructor(threadId: string) {
    this.threadId = threadId;
  }

  /** A fresh tree: just the session, idle. */
  static create(threadId: string): ThreadActors {
    const tree = new ThreadActors(threadId);
    tree.add('session', 'session', { threadId }, undefined);
    return tree;
  }

  static restore(threadId: string, persisted: PersistedActorTree): ThreadActors {
    const tree = new ThreadActors(threadId);
    for (const entry of persisted) tree.add(entry.machine, entry.id, entry.input, entry.snapshot);
    if (!tree.live.has(actorKey({ machine: 'session', id: 'session' }))) throw new Error(`thread ${threadId}: persisted tree has no session`);
    return tree;
  }

  private add(machine: LifecycleMachineName, id: string, input: Record<string, unknown>, persisted: Snapshot<unknown> | undefined): ActorState {
    const logic = machineOf(machine);
    const actor = { machine, id, input, snapshot: persisted ? restoreMachine(logic, persisted) : startMachine(logic, input) };
    this.live.set(actorKey({ machine, id }), actor);
    return actor;
  }

  get(key: string): ActorState | undefined {
    return this.live.get(key);
  }

  /**
   * Replays logged lifecycle events onto the tree (a thread loaded from an
   * older snapshot). They were accepted when they were written, so a refusal
   * here means the tree and the log disagree: it throws `IllegalTransition`.
   */
  replay(deliveries: readonly Delivery[]): void {
    for (const delivery of deliveries) {
      const key = actorKey(delivery);
      let actor = this.live.get(key);
      if (delivery.create) {
        if (actor) throw new Error(`thread ${this.threadId}: ${key} already exists`);
        actor = this.add(delivery.machine, delivery.id, delivery.create, undefined);
      }
      if (!actor) throw new Error(`thread ${this.threadId}: no live actor ${key}`);
      if (delivery.event) {
        const logic = machineOf(delivery.machine);
        assertAccepts(logic, actor.snapshot, delivery.event, delivery.id);
        actor.snapshot = stepMachine(logic, actor.snapshot, delivery.event);
      }
      if (actor.snapshot.status === 'done') this.live.delete(key);
    }
  }

  /** A committed draft's snapshots become the live ones; actors that reached a final state leave. */
  adopt(staged: ReadonlyMap<string, ActorState>): void {
    for (const [key, actor] of staged) {
      if (actor.snapshot.status === 'done') this.live.delete(key);
      else this.live.set(key, actor);
    }
  }

  /** The tree as it will be stored, with staged snapshots taking the place of live ones. */
  persist(staged: ReadonlyMap<string, ActorState>): PersistedActorTree {
    const entries = new Map<string, PersistedActor>();
    for (const [key, { machine, id, input, snapshot }] of [...this.live, ...staged]) {
      if (snapshot.status === 'done') entries.delete(key);
      else entries.set(key, { machine, id, input, snapshot: machineOf(machine).getPersistedSnapshot(snapshot) });
    }
    return [...entries.values()];
  }

  /** State names of all live actors, keyed like deliveries: for comparisons and inspection. */
  states(): Record<string, AnyMachineSnapshot['value']> {
    return Object.fromEntries([...this.live].map(([key, { snapshot }]) => [key, snapshot.value]));
  }

  stop(): void {
    this.live.clear();
  }
}
