import { type Actor, type AnyMachineSnapshot, type AnyStateMachine, type Snapshot, createActor } from 'xstate';
import type { PersistedActor, PersistedActorTree } from '../../domain/index.ts';
import { lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';
import { type Delivery, actorKey } from './routeEvent.ts';
import { strictSend } from '../strictSend.ts';


interface LiveActor {
  machine: LifecycleMachineName;
  id: string;
  input: Record<string, unknown>;
  actor: Actor<AnyStateMachine>;
}

const machineOf = (name: LifecycleMachineName): AnyStateMachine => lifecycleMachines[name].machine;

/**
 * The lifecycle actors of one thread: its session, its open turn, the open
 * parts and the approvals still waiting for a confirmation. Finished actors
 * leave the tree; their final state lives on in the read model.
 */
export class ThreadActors {
  readonly threadId: string;
  private readonly live = new Map<string, LiveActor>();

  private constructor(threadId: string) {
    this.threadId = threadId;
  }

  /** A fresh tree: just the session, idle. */
  static create(threadId: string): ThreadActors {
    const tree = new ThreadActors(threadId);
    tree.spawn('session', 'session', { threadId }, undefined);
    return tree;
  }

  static restore(threadId: string, persisted: PersistedActorTree): ThreadActors {
    const tree = new ThreadActors(threadId);
    for (const entry of persisted) tree.spawn(entry.machine, entry.id, entry.input, entry.snapshot);
    if (!tree.live.has(actorKey({ machine: 'session', id: 'session' }))) throw new Error(`thread ${threadId}: persisted tree has no session`);
    return tree;
  }

  private spawn(machine: LifecycleMachineName, id: string, input: Record<string, unknown>, snapshot: Snapshot<unknown> | undefined): Actor<AnyStateMachine> {
    const key = actorKey({ machine, id });
    const actor = createActor(machineOf(machine), { input, ...(snapshot ? { snapshot } : {}) });
    actor.start();
    this.live.set(key, { machine, id, input, actor });
    return actor;
  }

  snapshotOf(key: string): AnyMachineSnapshot | undefined {
    return this.live.get(key)?.actor.getSnapshot() as AnyMachineSnapshot | undefined;
  }

  inputOf(key: string): Record<string, unknown> | undefined {
    return this.live.get(key)?.input;
  }

  /**
   * Delivers committed lifecycle events. They were already accepted on a
   * staged copy, so a refusal here means the tree and the log disagree: the
   * strict send throws and the caller must discard this tree.
   */
  apply(deliveries: readonly Delivery[]): void {
    for (const delivery of deliveries) {
      const key = actorKey(delivery);
      let actor = this.live.get(key)?.actor;
      if (delivery.create) {
        if (actor) throw new Error(`thread ${this.threadId}: ${key} already exists`);
        actor = this.spawn(delivery.machine, delivery.id, delivery.create, undefined);
      }
      if (!actor) throw new Error(`thread ${this.threadId}: no live actor ${key}`);
      if (delivery.event) strictSend(actor, delivery.event);
      if (actor.getSnapshot().status === 'done') {
        actor.stop();
        this.live.delete(key);
      }
    }
  }

  /** The tree as it will be stored, with staged snapshots taking the place of live ones. */
  persist(staged: ReadonlyMap<string, { machine: LifecycleMachineName; id: string; input: Record<string, unknown>; snapshot: AnyMachineSnapshot }>): PersistedActorTree {
    const entries = new Map<string, PersistedActor>();
    for (const [key, { machine, id, input, actor }] of this.live) {
      entries.set(key, { machine, id, input, snapshot: actor.getPersistedSnapshot() });
    }
    for (const [key, { machine, id, input, snapshot }] of staged) {
      if (snapshot.status === 'done') entries.delete(key);
      else entries.set(key, { machine, id, input, snapshot: machineOf(machine).getPersistedSnapshot(snapshot) });
    }
    return [...entries.values()];
  }

  /** State names of all live actors, keyed like deliveries: for comparisons and inspection. */
  states(): Record<string, AnyMachineSnapshot['value']> {
    return Object.fromEntries([...this.live].map(([key, { actor }]) => [key, (actor.getSnapshot() as AnyMachineSnapshot).value]));
  }

  stop(): void {
    for (const { actor } of this.live.values()) actor.stop();
    this.live.clear();
  }
}
