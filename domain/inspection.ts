import type { LifecycleMachineName } from './threadStore.ts';

/** What one lifecycle actor did with one event, as its machine computed it. */
export interface ActorTransition {
  machine: LifecycleMachineName;
  /** `session`, or the turn, part or approval id. */
  actorId: string;
  /** Dotted state path before (`running.streaming`); `null` when the event brought the actor into being. */
  from: string | null;
  /** The machine's own event, or `(created)` for an actor that only came into being. */
  event: string;
  to: string;
  /** The stored event that caused it: its per-thread sequence and type. */
  threadSeq: number;
  domainEvent: string;
}

/** An event a machine would not take, and why. */
export interface RefusedEvent {
  machine: LifecycleMachineName;
  /** `null` when the refusal is about a thread-level rule rather than one actor. */
  actorId: string | null;
  /** Its state then; `absent` when there is no such live actor. */
  state: string;
  event: string;
  /** What the machine does not accept in that state, and what that state means. */
  reason: string;
}

/**
 * Everything the lifecycle machines did for one command on one thread: what
 * the live chart view shows. Published after the command is durable, or at
 * once for a command refused whole (which wrote nothing).
 */
export interface Inspection {
  threadId: string;
  commandId: string;
  /** The command's type (`turn.record`, `approval.respond`, …). */
  command: string;
  at: number;
  outcome: 'accepted' | 'rejected';
  /** The thread's sequence after the command (unchanged when rejected). */
  threadSeq: number;
  transitions: ActorTransition[];
  refused: RefusedEvent[];
}
