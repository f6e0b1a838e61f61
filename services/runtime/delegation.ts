import {
  DEFAULT_DELEGATION_LIMITS,
  type DelegationLimits,
  type Logger,
  type PartView,
  type StoredEvent,
  type TaskStatus,
  type ThreadView,
  type TurnView,
  TurnloomError,
  delegationRefusal,
  errorFields,
  silentLogger,
  stricterMode,
} from '../../domain/index.ts';
import { childTurnIdOf, systemCommandId } from '../engine/commands.ts';
import type { Engine } from '../engine/engine.ts';

export interface DelegationOptions {
  limits?: DelegationLimits;
  /** In a cluster: whether this engine owns the thread (only its owner acts for it). */
  owns?: (threadId: string) => boolean;
  /**
   * In a cluster: takes a thread this engine is to write (a new child, nobody
   * owns yet); `false` when a live engine owns it, whose own reactor then
   * catches up on it (see `reconcileEveryMs`).
   */
  take?: (threadId: string) => Promise<boolean>;
  /** How often what lies between parents and children is reconciled besides on start (a cluster's engines see each other's threads late); default: only on start. */
  reconcileEveryMs?: number;
  log?: Logger;
}

/** A child's answer, as its parent's call gets it: long enough for any report, bounded like every event. */
const MAX_ANSWER_CHARS = 100_000;

const settledTurn = (turn: TurnView) => turn.state === 'completed' || turn.state === 'failed' || turn.state === 'interrupted';
const runningTasks = (turn: TurnView): PartView[] => turn.messages[1].parts.filter((part) => part.task?.status === 'running' && part.state === 'running.tool.executing');

/** What a turn ended by saying: the completed text of its last step that has any (a step cut by a crash and streamed again counts once). */
function finalAnswer(turn: TurnView): string {
  const said = turn.messages[1].parts.filter((part) => part.kind === 'text' && part.state === 'completed' && part.text !== '');
  const last = said.at(-1)?.step;
  return said.filter((part) => part.step === last).map((part) => part.text).join('\n\n');
}


/**
 * The engine's side of delegation, a reactor on what is committed: a
 * `task.delegated` in a parent makes the child thread (at most the parent's
 * permissions, its depth in its head) and starts its turn; a child's turn
 * that settles gives its parent's call the outcome (`task.settled`); a
 * parent turn interrupted or settled interrupts every child still running,
 * and theirs in turn. Everything it does is keyed by the call, so doing it
 * again (after a crash, on every start) does it once; on start it settles
 * what a dead process left between the two sides.
 */
export class Delegation {
  private unsubscribe: (() => void) | undefined;
  private stopped = false;
  private readonly limits: DelegationLimits;
  private readonly log: Logger;
  private readonly inFlight = new Set<Promise<void>>();
  private reconciler: NodeJS.Timeout | undefined;
  private reconciling: Promise<void> | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly options: DelegationOptions = {},
  ) {
    this.limits = options.limits ?? DEFAULT_DELEGATION_LIMITS;
    this.log = options.log ?? silentLogger;
  }

  start(): this {
    this.unsubscribe = this.engine.onCommitted((events) => {
      for (const stored of events) this.react(stored);
    });
    this.reconcileSoon();
    if (this.options.reconcileEveryMs) this.reconciler = setInterval(() => this.reconcileSoon(), this.options.reconcileEveryMs);
    return this;
  }

  /** Stops reacting; what is under way finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.reconciler);
    this.unsubscribe?.();
    await Promise.all([...this.inFlight]);
  }

  private react({ threadId, event }: StoredEvent): void {
    if (this.stopped || !this.owns(threadId)) return;
    switch (event.type) {
      case 'task.delegated':
        this.track(this.makeChild(threadId, event.turnId, event.partId));
        return;
      case 'turn.interruptRequested':
        if (this.delegated(threadId, event.turnId)) this.track(this.stopChildren(threadId, event.turnId, `the turn that delegated it was interrupted: ${event.reason}`));
        return;
      case 'turn.completed':
      case 'turn.failed':
      case 'turn.interrupted':
        // Every turn that settles passes here: only a child's, or a delegating one's, is worth reading the thread for.
        if (this.engine.summary(threadId)?.parentThreadId) this.track(this.childSettled(threadId, event.turnId));
        if (this.delegated(threadId, event.turnId)) this.track(this.stopChildren(threadId, event.turnId, 'the turn that delegated it ended'));
        return;
      default:
        return;
    }
  }

  /** Whether the turn handed any call to a child (read from memory for a thread just written). */
  private delegated(threadId: string, turnId: string): boolean {
    return this.engine.readTurn(threadId, turnId)?.messages[1].parts.some((part) => part.task !== null) ?? false;
  }

  private track(work: Promise<void>): void {
    const tracked = work
      .catch((error: unknown) => {
        if (!this.stopped) this.log.error(errorFields(error), 'delegation: could not act on a parent or child thread');
      })
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private owns(threadId: string): boolean {
    return this.options.owns?.(threadId) ?? true;
  }

  private reconcileSoon(): void {
    if (this.reconciling || this.stopped) return;
    this.reconciling = this.reconcile().finally(() => (this.reconciling = null));
    this.track(this.reconciling);
  }

  /** Submits a command on a thread this engine may write, taking it first in a cluster; `false`: another engine owns it, and acts for it. */
  private async submitOn(command: Parameters<Engine['submit']>[0]): Promise<boolean> {
    if (this.options.take && !this.owns(command.threadId) && !(await this.options.take(command.threadId))) return false;
    await this.engine.submit(command);
    return true;
  }

  /**
   * Settles what a process that died left between parents and children:
   * a call whose child was never made, or settled unheard; a child still
   * running for a parent turn that ended.
   */
  private async reconcile(): Promise<void> {
    for (const { threadId, turnId } of this.engine.listOpenTurns()) {
      if (this.stopped) return;
      if (!this.owns(threadId)) continue;
      const view = await this.engine.getThread(threadId);
      const turn = view.turns[turnId]!;
      for (const part of runningTasks(turn)) await this.makeChild(threadId, turnId, part.id);
      if (view.parent) {
        const parentTurn = this.engine.readTurn(view.parent.threadId, view.parent.turnId);
        if (!parentTurn || settledTurn(parentTurn) || parentTurn.state.startsWith('interrupting')) await this.interrupt(threadId, turnId, 'the turn that delegated it ended');
      }
    }
  }

  /** Makes the child of a delegated call and starts its turn, unless that was done; a child that already settled answers at once. */
  private async makeChild(threadId: string, turnId: string, partId: string): Promise<void> {
    const parent = await this.engine.getThread(threadId);
    const turn = parent.turns[turnId];
    const part = turn?.messages[1].parts.find((candidate) => candidate.id === partId);
    const task = part?.task;
    if (!turn || !part?.tool || !task || task.status !== 'running') return;
    const settle = (status: TaskStatus, error: string) => this.settle(threadId, turnId, part, { status, answer: null, error, usage: null });
    if (!this.engine.summary(task.childThreadId)) {
      // The turn's calls before this one that were not refused: the budget refuses calls past it one by one, in the answer's order,
      // the same way whichever of them is handled first (counting every call of the answer refused them all).
      const at = turn.messages[1].parts.indexOf(part);
      const siblings = turn.messages[1].parts.slice(0, at).filter((candidate) => candidate.task !== null && candidate.task.status !== 'refused').length;
      const refusal = delegationRefusal(parent.parent, siblings, this.limits);
      if (refusal) return settle('refused', refusal);
      const made = await this.submitOn({
        type: 'thread.create',
        commandId: systemCommandId('child', task.childThreadId),
        threadId: task.childThreadId,
        title: (task.description ?? task.prompt).replace(/\s+/g, ' ').slice(0, 200),
        workspace: parent.workspace,
        owner: parent.owner,
        environment: parent.environment,
        permissions: { mode: stricterMode(task.mode, parent.permissions.mode), rules: parent.permissions.rules },
        agent: task.agent,
        parent: { threadId, turnId, partId, toolCallId: part.tool.callId, depth: (parent.parent?.depth ?? 0) + 1 },
      });
      if (!made) return;
    }
    const child = await this.engine.getThread(task.childThreadId);
    // Only the child this call made is started or heard: a thread of that id with another parent is none of its business.
    if (child.parent?.threadId !== threadId || child.parent.toolCallId !== part.tool.callId) return;
    const childTurn = childTurnIdOf(task.childThreadId);
    if (!child.turns[childTurn]) {
      await this.submitOn({
        type: 'turn.start',
        commandId: systemCommandId('childTurn', task.childThreadId),
        threadId: task.childThreadId,
        turnId: childTurn,
        input: { text: task.prompt },
        provider: turn.provider,
        agent: task.agent,
        ...(turn.trace ? { trace: turn.trace } : {}),
      });
      return;
    }
    await this.childSettled(task.childThreadId, childTurn);
  }

  /** A child's turn settled: its parent's call gets the answer, or why there is none. */
  private async childSettled(threadId: string, turnId: string): Promise<void> {
    const child = await this.engine.getThread(threadId);
    const turn = child.turns[turnId];
    if (!child.parent || turnId !== childTurnIdOf(threadId) || !turn || !settledTurn(turn)) return;
    const answer = finalAnswer(turn);
    const status = turn.state as TaskStatus;
    const error = status === 'completed' ? null : (turn.error ?? turn.interrupt?.reason ?? `the sub-agent's turn ${status}`);
    const parent = await this.engine.getThread(child.parent.threadId);
    const part = parent.turns[child.parent.turnId]?.messages[1].parts.find((candidate) => candidate.id === child.parent!.partId);
    if (!part) return;
    await this.settle(child.parent.threadId, child.parent.turnId, part, { status, answer: status === 'completed' ? answer.slice(0, MAX_ANSWER_CHARS) : null, error, usage: turn.usage });
  }

  private async settle(threadId: string, turnId: string, part: PartView, outcome: { status: TaskStatus; answer: string | null; error: string | null; usage: TurnView['usage'] | null }): Promise<void> {
    await this.submitOn({
      type: 'task.settle',
      commandId: systemCommandId('taskSettled', threadId, part.id),
      threadId,
      turnId,
      partId: part.id,
      childThreadId: part.task!.childThreadId,
      ...outcome,
    });
  }

  /** Interrupts every child of the turn still running; each child's own turn does the same for its children. */
  private async stopChildren(threadId: string, turnId: string, reason: string): Promise<void> {
    const turn = (await this.engine.getThread(threadId)).turns[turnId];
    if (!turn) return;
    for (const part of turn.messages[1].parts) {
      if (part.task) await this.interrupt(part.task.childThreadId, childTurnIdOf(part.task.childThreadId), reason);
    }
  }

  private async interrupt(threadId: string, turnId: string, reason: string): Promise<void> {
    const open: ThreadView['openTurnId'] = this.engine.summary(threadId)?.openTurnId ?? null;
    if (open !== turnId) return;
    const turn = this.engine.readTurn(threadId, turnId);
    if (!turn || turn.state.startsWith('interrupting')) return;
    await this.submitOn({ type: 'turn.interrupt', commandId: systemCommandId('stopChild', threadId, turnId), threadId, turnId, reason }).catch((error: unknown) => {
      // Settled meanwhile: nothing is left to stop.
      if (!(error instanceof TurnloomError) || error.code !== 'illegal_transition') throw error;
    });
  }
}
