import { DEFAULT_ENVIRONMENT, type ApprovalView, type ContextView, type ProviderMessage, defaultPermissions, type DomainEvent, type PartView, type ThreadView, type TurnView, addUsage, childId, emptyCursor, queuedTurnView, recordedChanges, recordedDiff, waitingInput, zeroUsage } from '../domain/index.ts';
import { approvalMachine, partMachine, sessionMachine, turnMachine } from '../machines/index.ts';
import type { AnyStateMachine, StateValue } from 'xstate';
import { stateName } from '../machines/strictSend.ts';
import { type LifecycleState, advanceLifecycle, advanceStateName, initialStateName } from '../machines/lifecycleState.ts';
import { advanceCursor } from '../domain/logInvariants.ts';
import { type Delivery, routeEvent } from '../machines/routeEvent.ts';

/** What the projector needs of a committed event. */
export interface ProjectedEvent {
  threadSeq: number;
  at: number;
  event: DomainEvent;
}

export function emptyThreadView(threadId: string, at: number): ThreadView {
  return {
    id: threadId,
    title: '',
    renamedAt: null,
    workspace: null,
    owner: null,
    environment: DEFAULT_ENVIRONMENT,
    permissions: defaultPermissions(),
    parent: null,
    archived: false,
    createdAt: at,
    updatedAt: at,
    seq: 0,
    session: { state: initialStateName(sessionMachine, { threadId }), providerSessionId: null, failure: null },
    turnIds: [],
    turns: {},
    openTurnId: null,
    queue: [],
    compaction: 'auto',
    context: null,
    agent: null,
    header: null,
    turnContext: null,
    activities: [],
    checkpointsOff: null,
    reverts: [],
    revert: null,
    usage: zeroUsage(),
    cursor: emptyCursor(),
  };
}

function newTurn(event: Extract<DomainEvent, { type: 'turn.requested' }>, at: number): TurnView {
  return {
    id: event.turnId,
    state: initialStateName(turnMachine, { turnId: event.turnId }),
    provider: event.provider,
    messages: [
      {
        id: childId(event.turnId, 'user'),
        role: 'user',
        parts: [
          { id: childId(event.turnId, 'input'), kind: 'text', state: 'completed', step: 0, text: event.input.text, signature: null, tool: null, task: null, error: null },
        ],
      },
      { id: childId(event.turnId, 'assistant'), role: 'assistant', parts: [] },
    ],
    approvals: [],
    inbox: [],
    compactions: 0,
    steps: [],
    activities: [],
    usage: zeroUsage(),
    stopReason: null,
    error: null,
    interrupt: null,
    lease: null,
    leases: 0,
    checkpoint: null,
    revertedAt: null,
    summary: null,
    mode: event.mode,
    trace: event.trace ?? null,
    agent: event.agent ?? null,
    requestedAt: at,
    startedAt: null,
    endedAt: null,
  };
}

function newPart(event: Extract<DomainEvent, { type: 'part.started' }>): PartView {
  return {
    id: event.partId,
    kind: event.kind,
    state: initialStateName(partMachine, { partId: event.partId, kind: event.kind }),
    step: event.step,
    text: '',
    signature: null,
    tool: event.kind === 'tool' ? { callId: event.toolCallId, name: event.toolName, inputText: '', input: null, output: null, outcome: null } : null,
    task: null,
    error: null,
  };
}

/** Replaces one turn row in `view.turns`, which the fold owns (see `projectInto`): no copy of the other turns. */
function mapTurn(view: ThreadView, turnId: string, update: (turn: TurnView) => TurnView): ThreadView {
  const turn = view.turns[turnId];
  if (!turn) throw new Error(`projector: unknown turn ${turnId}`);
  view.turns[turnId] = update(turn);
  return view;
}

function mapPart(turn: TurnView, partId: string, update: (part: PartView) => PartView): TurnView {
  const [user, assistant] = turn.messages;
  const index = assistant.parts.findIndex((part) => part.id === partId);
  if (index < 0) throw new Error(`projector: unknown part ${partId}`);
  const parts = assistant.parts.slice();
  parts[index] = update(parts[index]!);
  return { ...turn, messages: [user, { ...assistant, parts }] };
}

function mapApproval(turn: TurnView, approvalId: string, update: (approval: ApprovalView) => ApprovalView): TurnView {
  return { ...turn, approvals: turn.approvals.map((approval) => (approval.id === approvalId ? update(approval) : approval)) };
}

function findTurnOfPart(view: ThreadView, partId: string): string {
  for (const turnId of view.turnIds.slice().reverse()) {
    if (view.turns[turnId]!.messages[1].parts.some((part) => part.id === partId)) return turnId;
  }
  throw new Error(`projector: unknown part ${partId}`);
}

function findTurnOfApproval(view: ThreadView, approvalId: string): string {
  for (const turnId of view.turnIds.slice().reverse()) {
    if (view.turns[turnId]!.approvals.some((approval) => approval.id === approvalId)) return turnId;
  }
  throw new Error(`projector: unknown approval ${approvalId}`);
}

/**
 * The snapshot a machine already stepped to for one delivery (the engine's
 * draft has it), so the fold need not step it again; `undefined`: step it here.
 */
export type SteppedSnapshot = (delivery: Delivery) => { value: StateValue; context: unknown } | undefined;

/** The state after a delivery: the one already stepped, or the machine's own answer. */
function stepped<C extends object>(machine: AnyStateMachine, current: LifecycleState<C>, delivery: Delivery & { event: { type: string } }, given: SteppedSnapshot | undefined): LifecycleState<C> {
  const snapshot = given?.(delivery);
  return snapshot ? { state: stateName(snapshot.value), context: snapshot.context as C } : advanceLifecycle(machine, current, delivery.event);
}

/** Only the name of the state after a delivery, for the entities whose context the view does not keep. */
function steppedName<C extends object>(machine: AnyStateMachine, current: LifecycleState<C>, delivery: Delivery & { event: { type: string } }, given: SteppedSnapshot | undefined): string {
  const snapshot = given?.(delivery);
  return snapshot ? stateName(snapshot.value) : advanceStateName(machine, current, delivery.event);
}

/** Moves the state names of every entity the event concerns, using the machines themselves. */
function advanceStates(view: ThreadView, deliveries: Delivery[], given: SteppedSnapshot | undefined): ThreadView {
  let next = view;
  for (const delivery of deliveries) {
    if (delivery.event === null) continue;
    const step = <C extends object>(machine: AnyStateMachine, current: LifecycleState<C>) => stepped(machine, current, delivery as Delivery & { event: { type: string } }, given);
    const name = <C extends object>(machine: AnyStateMachine, current: LifecycleState<C>) => steppedName(machine, current, delivery as Delivery & { event: { type: string } }, given);
    switch (delivery.machine) {
      case 'session': {
        const { state, context } = step(sessionMachine, { state: next.session.state, context: { threadId: next.id, providerSessionId: next.session.providerSessionId, failure: next.session.failure } });
        next = { ...next, session: { state, providerSessionId: context.providerSessionId, failure: context.failure } };
        break;
      }
      case 'turn':
        next = mapTurn(next, delivery.id, (turn) => ({
          ...turn,
          state: name(turnMachine, { state: turn.state, context: { turnId: turn.id, step: turn.steps.length, waitingInputs: waitingInput(turn).length, replacements: 0 } }),
        }));
        break;
      case 'part':
        next = mapTurn(next, findTurnOfPart(next, delivery.id), (turn) =>
          mapPart(turn, delivery.id, (part) => ({
            ...part,
            state: name(partMachine, { state: part.state, context: { partId: part.id, kind: part.kind } }),
          })),
        );
        break;
      case 'approval':
        next = mapTurn(next, findTurnOfApproval(next, delivery.id), (turn) =>
          mapApproval(turn, delivery.id, (approval) => ({
            ...approval,
            state: name(approvalMachine, { state: approval.state, context: { approvalId: approval.id } }),
          })),
        );
        break;
    }
  }
  return next;
}

/** How the model reads a compaction's summary in place of the turns it replaced. */
export const summaryMessage = (summary: string): ProviderMessage => ({ role: 'user', text: `Summary of the earlier conversation (older turns were compacted):\n${summary}` });

/** Claimed input becomes part of the user's message, tagged with the step whose request first carries it. */
function claimInputs(turn: TurnView, inputIds: readonly string[], step: number): TurnView {
  const claimed = turn.inbox.filter((item) => inputIds.includes(item.id) && item.claimedInStep === null);
  const [user, assistant] = turn.messages;
  return {
    ...turn,
    inbox: turn.inbox.map((item) => (claimed.includes(item) ? { ...item, claimedInStep: step } : item)),
    messages: [
      {
        ...user,
        parts: [
          ...user.parts,
          // Named by the input's place in the inbox (the log's order): its own id may be as long as an id can be.
          ...claimed.map((item): PartView => ({ id: childId(turn.id, `steered-${turn.inbox.indexOf(item) + 1}`), kind: 'text', state: 'completed', step, text: item.text, signature: null, tool: null, task: null, error: null })),
        ],
      },
      assistant,
    ],
  };
}

/** Content of the event (texts, inputs, outputs, usage), before lifecycle states move. */
function applyContent(view: ThreadView, event: DomainEvent, at: number, seq: number): ThreadView {
  switch (event.type) {
    case 'thread.created':
      return { ...view, title: event.title, workspace: event.workspace, owner: event.owner, environment: event.environment, permissions: event.permissions, parent: event.parent ?? null, createdAt: at };
    case 'thread.configured':
      return { ...view, permissions: { mode: event.mode ?? view.permissions.mode, rules: event.rules ?? view.permissions.rules }, compaction: event.compaction ?? view.compaction, agent: event.agent ?? view.agent ?? null };
    case 'permission.ruleAdded':
      return { ...view, permissions: { ...view.permissions, rules: [...view.permissions.rules, event.rule] } };
    case 'thread.renamed':
      return { ...view, title: event.title, renamedAt: seq };
    case 'thread.archived':
      return { ...view, archived: true };
    case 'session.started':
    case 'session.failed':
    case 'session.stopRequested':
    case 'session.stopped':
      return view;
    case 'turn.requested':
      view.turns[event.turnId] = newTurn(event, at);
      return { ...view, turnIds: [...view.turnIds, event.turnId], openTurnId: event.turnId, queue: view.queue.filter((queued) => queued.turnId !== event.turnId) };
    case 'turn.queued': {
      const queued = queuedTurnView({ turnId: event.queuedTurnId, input: event.input, provider: event.provider, mode: event.mode }, seq, at);
      return { ...view, queue: event.place === 'front' ? [queued, ...view.queue] : [...view.queue, queued] };
    }
    case 'input.steered':
      return mapTurn(view, event.turnId, (turn) => ({ ...turn, inbox: [...turn.inbox, { id: event.inputId, text: event.text, at, claimedInStep: null }] }));
    case 'input.claimed':
      return mapTurn(view, event.turnId, (turn) => claimInputs(turn, event.inputIds, event.step));
    case 'request.context':
      return { ...view, turnContext: { turnId: event.turnId, context: event.context } };
    case 'request.header':
      return { ...view, header: { ...event.header, seq } };
    case 'context.replaced':
      return { ...view, context: { base: event.messages, fromTurnId: event.turnId, fromStep: event.step, by: event.by, summary: null, setBefore: { turnId: event.turnId, step: event.step } } };
    case 'compaction.started':
    case 'compaction.failed':
      return view;
    case 'context.compacted': {
      const summarised: ContextView = {
        base: [summaryMessage(event.summary)],
        fromTurnId: event.keptFromTurnId,
        fromStep: 0,
        by: 'compaction',
        summary: event.summary,
        setBefore: { turnId: event.turnId, step: event.step },
      };
      return mapTurn({ ...view, context: summarised }, event.turnId, (turn) => ({ ...turn, compactions: turn.compactions + 1 }));
    }
    case 'turn.started':
      // Dated by the lease it was started under: a worker writes the start with its first answer, up to a window later.
      return mapTurn(view, event.turnId, (turn) => ({ ...turn, startedAt: turn.startedAt ?? turn.lease?.since ?? at }));
    case 'turn.leased':
      return mapTurn(view, event.turnId, (turn) => ({ ...turn, lease: { workerId: event.workerId, token: event.token, keyHash: event.keyHash, since: at, process: event.process ?? null }, leases: turn.leases + 1 }));
    case 'turn.leaseLost':
      return mapTurn(view, event.turnId, (turn) => ({ ...turn, lease: null }));
    case 'step.started':
      return mapTurn(view, event.turnId, (turn) => ({
        ...turn,
        steps: [...turn.steps, { step: event.step, responseId: null, model: null, stopReason: null, outcome: null, finishReason: null, usage: null, error: null }],
      }));
    case 'response.started':
      return mapTurn(view, event.turnId, (turn) => ({
        ...turn,
        steps: turn.steps.map((step) => (step.step === event.step ? { ...step, responseId: event.responseId, model: event.model } : step)),
      }));
    case 'response.completed':
      return mapTurn(view, event.turnId, (turn) => ({
        ...turn,
        steps: turn.steps.map((step) => (step.step === event.step ? { ...step, stopReason: event.stopReason, finishReason: event.rawReason } : step)),
      }));
    case 'tools.started':
      return view;
    case 'step.finished': {
      const usage = event.usage;
      const next = mapTurn(view, event.turnId, (turn) => ({
        ...turn,
        steps: turn.steps.map((step) =>
          step.step === event.step ? { ...step, outcome: event.outcome, finishReason: event.finishReason ?? step.finishReason, usage, error: event.error } : step,
        ),
        usage: usage ? addUsage(turn.usage, usage) : turn.usage,
      }));
      return usage ? { ...next, usage: addUsage(next.usage, usage) } : next;
    }
    case 'turn.completed':
      return { ...mapTurn(view, event.turnId, (turn) => ({ ...turn, stopReason: event.stopReason, endedAt: at, lease: null })), openTurnId: null };
    case 'turn.failed':
      return { ...mapTurn(view, event.turnId, (turn) => ({ ...turn, error: event.error, endedAt: at, lease: null })), openTurnId: null };
    case 'turn.summarized': {
      // As with a revert, a window may not hold the turn: the store's row of it takes the summary.
      const turn = view.turns[event.settledTurnId];
      if (turn) view.turns[event.settledTurnId] = { ...turn, summary: event.summary };
      return view;
    }
    case 'turn.interruptRequested':
      return mapTurn(view, event.turnId, (turn) => ({ ...turn, interrupt: { reason: event.reason, cause: null } }));
    case 'turn.interrupted':
      return {
        ...mapTurn(view, event.turnId, (turn) => ({ ...turn, interrupt: { reason: turn.interrupt?.reason ?? event.reason, cause: event.cause }, endedAt: at, lease: null })),
        openTurnId: null,
      };
    case 'part.started':
      return mapTurn(view, event.turnId, (turn) => {
        const [user, assistant] = turn.messages;
        return { ...turn, messages: [user, { ...assistant, parts: [...assistant.parts, newPart(event)] }] };
      });
    case 'part.delta':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, text: part.text + event.text })));
    case 'part.completed':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, signature: event.signature })));
    case 'tool.inputDelta':
      return mapTurn(view, event.turnId, (turn) =>
        mapPart(turn, event.partId, (part) => ({ ...part, tool: part.tool && { ...part.tool, inputText: part.tool.inputText + event.text } })),
      );
    case 'tool.inputReady':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, tool: part.tool && { ...part.tool, input: event.input } })));
    case 'tool.executing':
      return view;
    case 'tool.result':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, tool: part.tool && { ...part.tool, output: event.output } })));
    case 'tool.failed':
      return mapTurn(view, event.turnId, (turn) =>
        mapPart(turn, event.partId, (part) => ({ ...part, error: event.error, tool: part.tool && { ...part.tool, output: event.error } })),
      );
    case 'part.failed':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, error: event.error })));
    case 'part.interrupted': {
      const synthetic = event.tool;
      return mapTurn(view, event.turnId, (turn) =>
        mapPart(turn, event.partId, (part) => ({
          ...part,
          error: event.reason,
          tool: part.tool && synthetic ? { ...part.tool, output: synthetic.result, outcome: synthetic.outcome } : part.tool,
        })),
      );
    }
    case 'approval.requested':
      return mapTurn(view, event.turnId, (turn) => ({
        ...turn,
        approvals: [
          ...turn.approvals,
          {
            id: event.approvalId,
            state: initialStateName(approvalMachine, { approvalId: event.approvalId }),
            requestedAt: at,
            partId: event.partId,
            toolCallId: event.toolCallId,
            toolName: event.toolName,
            input: event.input,
            kind: event.kind,
            subject: event.subject,
            preview: event.preview ?? null,
            decidedBy: null,
            note: null,
            reason: null,
          },
        ],
      }));
    case 'approval.granted':
    case 'approval.denied':
      return mapTurn(view, event.turnId, (turn) => {
        const decided = mapApproval(turn, event.approvalId, (approval) => ({ ...approval, decidedBy: event.by, note: event.note }));
        return event.type === 'approval.denied'
          ? mapPart(decided, event.partId, (part) => ({ ...part, error: `denied by ${event.by}${event.note ? `: ${event.note}` : ''}` }))
          : decided;
      });
    case 'approval.expired':
      return mapTurn(view, event.turnId, (turn) => mapPart(turn, event.partId, (part) => ({ ...part, error: 'approval expired' })));
    case 'approval.cancelled':
    case 'approval.undelivered':
      return mapTurn(view, event.turnId, (turn) => mapApproval(turn, event.approvalId, (approval) => ({ ...approval, reason: event.reason })));
    case 'approval.consumed':
      return view;
    // A child's progress reads as activities of the parent's call; its usage counts to the parent's turn (and thread).
    case 'task.delegated': {
      const task = { childThreadId: event.childThreadId, agent: event.agent, prompt: event.prompt, description: event.description, mode: event.mode, status: 'running' as const, answer: null, error: null, usage: null };
      const activity = { seq, at, kind: 'task' as const, message: `${event.agent} started${event.description ? `: ${event.description}` : ''}`, data: { partId: event.partId, childThreadId: event.childThreadId, agent: event.agent } };
      return mapTurn(view, event.turnId, (turn) => mapPart({ ...turn, activities: [...turn.activities, activity] }, event.partId, (part) => ({ ...part, task })));
    }
    case 'task.settled': {
      const activity = {
        seq,
        at,
        kind: 'task' as const,
        message: `${event.childThreadId} ${event.status}${event.error ? `: ${event.error}` : ''}`,
        data: { partId: event.partId, childThreadId: event.childThreadId, status: event.status, answer: event.answer, usage: event.usage },
      };
      const next = mapTurn(view, event.turnId, (turn) =>
        mapPart({ ...turn, activities: [...turn.activities, activity], usage: event.usage ? addUsage(turn.usage, event.usage) : turn.usage }, event.partId, (part) => ({
          ...part,
          task: part.task && { ...part.task, status: event.status, answer: event.answer, error: event.error, usage: event.usage },
        })),
      );
      return event.usage ? { ...next, usage: addUsage(next.usage, event.usage) } : next;
    }
    case 'activity.recorded': {
      const activity = { seq, at, kind: event.kind, message: event.message, data: event.data };
      return event.turnId === null
        ? { ...view, activities: [...view.activities, activity] }
        : mapTurn(view, event.turnId, (turn) => ({ ...turn, activities: [...turn.activities, activity] }));
    }
    case 'checkpoint.captured':
      return mapTurn(view, event.turnId, (turn) => {
        const checkpoint = { before: null, after: null, diff: null, ...turn.checkpoint, uncaptured: turn.checkpoint?.uncaptured ?? [] };
        const tree = { ref: event.ref, commit: event.commit };
        return {
          ...turn,
          checkpoint: event.side === 'before' ? { ...checkpoint, before: tree } : { ...checkpoint, after: tree, diff: recordedDiff(event.diff), uncaptured: event.uncaptured ?? [] },
        };
      });
    case 'checkpoint.unavailable':
      return { ...view, checkpointsOff: event.reason };
    case 'checkpoint.revertStarted':
      return { ...view, revert: { revertId: event.revertId, turnIds: event.turnIds, turns: event.turns, by: event.by, startedAt: at } };
    case 'checkpoint.revertFailed':
      return { ...view, revert: null };
    case 'checkpoint.reverted': {
      // A window holds only its newest turns: those it holds are marked, the others are marked in the store's rows.
      for (const turnId of event.turnIds) {
        const turn = view.turns[turnId];
        if (turn) view.turns[turnId] = { ...turn, revertedAt: seq };
      }
      const revert = { seq, at, by: event.by, turnIds: event.turnIds, saved: event.saved ?? null, ...recordedChanges(event) };
      return { ...view, revert: null, reverts: [...view.reverts, revert] };
    }
  }
}

/**
 * The read model after one more event, built on `view` and mutating its
 * `turns` record, which the caller must own (a fresh copy per fold or per
 * draft): turn rows themselves are never mutated, only replaced, so long
 * threads do not copy every turn for every event. Throws `InvariantViolation`
 * before changing anything when the event would break the log's structure.
 */
export function projectInto(view: ThreadView, { threadSeq, at, event }: ProjectedEvent, given?: SteppedSnapshot): ThreadView {
  const cursor = advanceCursor(view.cursor, threadSeq, event);
  const content = applyContent(view, event, at, threadSeq);
  const states = advanceStates(content, routeEvent(event), given);
  return { ...states, seq: threadSeq, updatedAt: at, cursor };
}

/** The read model after one more event. Pure: the same events always give the same view. */
export function project(view: ThreadView, event: ProjectedEvent): ThreadView {
  return projectInto({ ...view, turns: { ...view.turns } }, event);
}

/** Folds a whole log: what the stored projection must equal. */
export function rebuildView(threadId: string, events: readonly ProjectedEvent[]): ThreadView {
  const first = events[0];
  let view = emptyThreadView(threadId, first ? first.at : 0);
  for (const event of events) view = projectInto(view, event);
  return view;
}
