import { startMachine, stepMachine } from '../../machines/machineStep.ts';
import { explainRefusal, lifecycleMachines, type LifecycleMachineName } from '../../machines/index.ts';
import { type ActorTransition, type DomainEvent, IllegalTransition, type QueuedTurnView, type RefusedEvent, type ThreadView, TurnloomError, fitEvent, jsonBytes } from '../../domain/index.ts';
import { projectInto } from '../../protocol/projector.ts';
import { type Delivery, actorKey, routeEvent } from '../../machines/routeEvent.ts';
import { assertAccepts, stateName } from '../../machines/strictSend.ts';
import type { ActorState, ThreadActors } from './threadActors.ts';

/**
 * How much input may wait on one thread, by count and in UTF-8 bytes: turns
 * in its queue, and input steered into the open turn that no step took yet.
 * Input the thread already accepted is never refused for them: steered
 * input a turn settled without still becomes the next turn.
 */
export interface QueueLimits {
  maxTurns: number;
  maxBytes: number;
}

/**
 * Every stored event must travel in one answer, in either encoding. What a
 * client sends over that is refused; what the system records (provider and
 * tool output) is cut with a note instead, so a turn is never lost to it.
 * How much input may wait on the thread is the turn inbox's (`turnQueue.ts`).
 */
export interface DraftLimits {
  maxEventBytes: number;
  oversize: 'refuse' | 'cut';
  queue: QueueLimits;
}

/** The committed event at one thread seq of the draft's thread. */
export type LoggedEvent = (threadSeq: number) => DomainEvent | undefined;

/** The state name the read model shows for an entity that has no live actor (finished, or never existed). */
function viewStateOf(view: ThreadView, delivery: Delivery): string {
  const turns = view.turnIds.map((id) => view.turns[id]!);
  switch (delivery.machine) {
    case 'session':
      return view.session.state;
    case 'turn':
      return view.turns[delivery.id]?.state ?? 'absent';
    case 'part':
      return turns.flatMap((turn) => turn.messages[1].parts).find((part) => part.id === delivery.id)?.state ?? 'absent';
    case 'approval':
      return turns.flatMap((turn) => turn.approvals).find((approval) => approval.id === delivery.id)?.state ?? 'absent';
  }
}

/** A refusal as the live chart view shows it, with the machine's reason. */
export function refusedEvent(error: IllegalTransition): RefusedEvent {
  const machine = error.machine as LifecycleMachineName;
  return { machine, actorId: error.actorId, state: error.state, event: error.event, reason: explainRefusal(machine, error.state, error.event) };
}

/**
 * The thread as it would be after the events emitted so far. Each `emit`
 * is all-or-nothing: every actor the event concerns must accept it (on a
 * staged copy, the live actors are untouched) and the log invariants must
 * hold; otherwise it throws and the draft is as before. The engine commits a
 * draft's events, read model and actor snapshots in one transaction, and
 * only then delivers the events to the live actors.
 */
export class ThreadDraft {
  readonly threadId: string;
  readonly at: number;
  readonly base: ThreadView;
  view: ThreadView;
  readonly events: Array<{ threadSeq: number; event: DomainEvent }> = [];
  /** What the machines did with the emitted events, for the live chart view. */
  readonly transitions: ActorTransition[] = [];
  /** Events the machines refused and the command recorded as diagnostics instead. */
  readonly refusals: RefusedEvent[] = [];
  private staged = new Map<string, ActorState>();
  readonly limits: DraftLimits;
  private readonly actors: ThreadActors;
  private readonly logged: LoggedEvent;

  constructor(actors: ThreadActors, view: ThreadView, at: number, limits: DraftLimits, logged: LoggedEvent) {
    this.threadId = actors.threadId;
    this.actors = actors;
    this.limits = limits;
    this.logged = logged;
    this.base = view;
    // The draft owns its own turns record; the base view stays untouched.
    this.view = { ...view, turns: { ...view.turns } };
    this.at = at;
  }

  /**
   * An event over the size limit: a client's is refused, the system's (a
   * provider's output, a checkpoint's changes) is cut with a note. A revert's
   * list of files is the worker's, and the files are back by the time it is
   * recorded: it is cut too, whoever asked for the revert.
   */
  private fit(event: DomainEvent): DomainEvent {
    const { value, cut } = fitEvent(event, this.limits.maxEventBytes);
    if (!cut) return event;
    if (this.limits.oversize === 'cut' || event.type === 'checkpoint.reverted') return value;
    const size = jsonBytes(event);
    throw new TurnloomError('invalid_payload', `${event.type} would take ${size} bytes as JSON, over the ${this.limits.maxEventBytes}-byte limit of one event; send less`, {
      event: event.type,
      size,
      limit: this.limits.maxEventBytes,
    });
  }

  emit(original: DomainEvent): void {
    const event = this.fit(original);
    const deliveries = routeEvent(event);
    const staged = new Map(this.staged);
    const threadSeq = this.view.seq + 1;
    const transitions: ActorTransition[] = [];
    for (const delivery of deliveries) {
      const key = actorKey(delivery);
      const machine = lifecycleMachines[delivery.machine].machine;
      let actor = staged.get(key) ?? this.actors.get(key);
      let from = actor ? stateName(actor.snapshot.value) : null;
      if (delivery.create) {
        if (actor || viewStateOf(this.view, delivery) !== 'absent') {
          // An id used twice: the live actor (or its final state) refuses to start over.
          throw new IllegalTransition(delivery.machine, from ?? viewStateOf(this.view, delivery), delivery.event?.type ?? event.type, delivery.id);
        }
        actor = { machine: delivery.machine, id: delivery.id, input: delivery.create, snapshot: startMachine(machine, delivery.create) };
        from = null;
      }
      if (!actor) throw new IllegalTransition(delivery.machine, viewStateOf(this.view, delivery), delivery.event?.type ?? event.type, delivery.id);
      if (delivery.event) {
        assertAccepts(machine, actor.snapshot, delivery.event, delivery.id);
        actor = { ...actor, snapshot: stepMachine(machine, actor.snapshot, delivery.event) };
      }
      staged.set(key, actor);
      const to = stateName(actor.snapshot.value);
      transitions.push({ machine: delivery.machine, actorId: delivery.id, from, event: delivery.event?.type ?? '(created)', to, threadSeq, domainEvent: event.type });
    }
    // The read model takes its states from the snapshots just stepped: each event goes through a machine once.
    this.view = projectInto(this.view, { threadSeq, at: this.at, event }, (delivery) => staged.get(actorKey(delivery))?.snapshot);
    this.staged = staged;
    this.events.push({ threadSeq, event });
    this.transitions.push(...transitions);
  }

  /** The `turn.queued` that queued a turn, with its whole input: emitted by this draft, or in the log. */
  /** The event at `seq`, emitted in this draft or read from the log. */
  eventAt(seq: number): DomainEvent | undefined {
    return seq > this.base.seq ? this.events[seq - this.base.seq - 1]?.event : this.logged(seq);
  }

  queuedTurn(queued: QueuedTurnView): Extract<DomainEvent, { type: 'turn.queued' }> {
    const event = this.eventAt(queued.seq);
    if (event?.type !== 'turn.queued' || event.queuedTurnId !== queued.turnId) throw new Error(`thread ${this.threadId}: turn ${queued.turnId} is not queued at seq ${queued.seq}`);
    return event;
  }

  /** Notes an event the machines refused and the command kept going without (a worker's output, recorded as a diagnostic). */
  noteRefusal(error: IllegalTransition): void {
    this.refusals.push(refusedEvent(error));
  }

  /** Snapshots of the actors this draft moved, for the persisted tree. */
  stagedActors(): ReadonlyMap<string, ActorState> {
    return this.staged;
  }

  /** True when this draft opened or closed a turn (the moments worth a snapshot). */
  touchedTurnBoundary(): boolean {
    return this.events.some(({ event }) => event.type === 'turn.requested' || event.type === 'turn.completed' || event.type === 'turn.failed' || event.type === 'turn.interrupted');
  }
}
