// @ts-check
/**
 * What the page knows of one thread's actors: the view (`thread.get`) as the
 * base, newer transitions from `inspect` records over it until a fresher view
 * includes them, and the last transition each actor made while the page was
 * open (only the engine's records say what fired: the page never recomputes it).
 */

/**
 * @typedef {import('./stream.js').StoredEvent} StoredEvent
 * @typedef {import('./stream.js').Inspection} Inspection
 * @typedef {{ from: string | null, event: string, to: string, threadSeq: number }} Fired
 * @typedef {'running' | 'completed' | 'failed' | 'interrupted' | 'refused'} TaskStatus
 * @typedef {{ childThreadId: string, agent: string, prompt: string, description: string | null, mode: string, status: TaskStatus,
 *   answer: string | null, error: string | null, usage: { input: number, output: number } | null }} TaskView a call handed to a sub-agent
 * @typedef {{ id: string, kind: string, state: string, step: number, text: string, error?: string | null,
 *   tool: { name: string, inputText: string, input?: unknown, output?: string | null, outcome?: 'notStarted' | 'unknown' | null } | null,
 *   task?: TaskView | null }} PartView
 * @typedef {{ id: string, state: string, partId: string, toolName: string, kind: string, subject: string, input: unknown, requestedAt: number,
 *   preview?: import('./approvals.js').ApprovalPreview | null }} ApprovalView
 * @typedef {{ id: string, state: string, messages: Array<{ parts: PartView[] }>, approvals: ApprovalView[], requestedAt: number,
 *   provider: { name: string, model: string | null }, error: string | null, stopReason: string | null, agent?: string | null,
 *   checkpoint?: { diff: { filesChanged: number, additions: number, deletions: number } | null } | null, revertedAt?: number | null }} TurnView
 * @typedef {{ id: string, title: string, seq: number, session: { state: string, failure: string | null }, turnIds: string[],
 *   turns: Record<string, TurnView>, openTurnId: string | null, environment: string, workspace: string | null, queue?: Array<{ turnId: string }>,
 *   agent?: string | null, turnContext?: { turnId: string, context: { agent: string } } | null,
 *   parent?: { threadId: string, turnId: string, partId: string, toolCallId: string, depth: number } | null }} ThreadView
 */

/** @param {string} machine @param {string} id */
const key = (machine, id) => `${machine}:${id}`;

export class ThreadModel {
  constructor() {
    /** @type {ThreadView | null} */
    this.view = null;
    this.viewSeq = 0;
    /** Actor states newer than the view. @type {Map<string, { state: string, threadSeq: number }>} */
    this.overlay = new Map();
    /** The last transition each actor made, as the engine reported it. @type {Map<string, Fired>} */
    this.inspected = new Map();
    /** Which turn a part or an approval belongs to, from the log. @type {Map<string, string>} */
    this.turnOf = new Map();
  }

  /** @param {ThreadView} view @param {number} seq */
  setView(view, seq) {
    this.view = view;
    this.viewSeq = seq;
    for (const [k, entry] of this.overlay) if (entry.threadSeq <= seq) this.overlay.delete(k);
  }

  /** @param {StoredEvent} stored */
  noteEvent(stored) {
    const e = stored.event;
    if (e.partId && e.turnId) this.turnOf.set(key('part', e.partId), e.turnId);
    if (e.approvalId && e.turnId) this.turnOf.set(key('approval', e.approvalId), e.turnId);
  }

  /** @param {Inspection} inspection */
  applyInspection(inspection) {
    for (const t of inspection.transitions ?? []) {
      const k = key(t.machine, t.actorId);
      const known = this.inspected.get(k);
      if (!known || t.threadSeq >= known.threadSeq) this.inspected.set(k, { from: t.from, event: t.event, to: t.to, threadSeq: t.threadSeq });
      if (t.threadSeq > this.viewSeq) {
        const current = this.overlay.get(k);
        if (!current || t.threadSeq >= current.threadSeq) this.overlay.set(k, { state: t.to, threadSeq: t.threadSeq });
      }
    }
  }

  /** @param {string} machine @param {string} id @param {string | undefined} fromView */
  state(machine, id, fromView) {
    return this.overlay.get(key(machine, id))?.state ?? fromView;
  }

  /** `undefined` until the view is loaded. */
  sessionState() {
    return this.state('session', 'session', this.view?.session.state);
  }

  /** Newest first. */
  turnIds() {
    return [...(this.view?.turnIds ?? [])].reverse();
  }

  /** @param {string} turnId */
  turn(turnId) {
    return this.view?.turns[turnId] ?? null;
  }

  /** @param {string} turnId */
  turnState(turnId) {
    return this.state('turn', turnId, this.turn(turnId)?.state);
  }

  /**
   * The parts of a turn with their current states; a part the view does not
   * hold yet (started since) is there from the inspect records.
   * @param {string} turnId
   * @returns {Array<{ id: string, state: string, part: PartView | null }>}
   */
  partsOf(turnId) {
    const parts = this.turn(turnId)?.messages[1]?.parts ?? [];
    const listed = parts.map((part) => ({ id: part.id, state: this.state('part', part.id, part.state) ?? part.state, part }));
    return [...listed, ...this.newActors('part', turnId, new Set(parts.map((p) => p.id)))];
  }

  /**
   * @param {string} turnId
   * @returns {Array<{ id: string, state: string, approval: ApprovalView | null }>}
   */
  approvalsOf(turnId) {
    const approvals = this.turn(turnId)?.approvals ?? [];
    const listed = approvals.map((a) => ({ id: a.id, state: this.state('approval', a.id, a.state) ?? a.state, approval: a }));
    return [...listed, ...this.newActors('approval', turnId, new Set(approvals.map((a) => a.id)))];
  }

  /** @param {'part' | 'approval'} machine @param {string} turnId @param {Set<string>} known */
  newActors(machine, turnId, known) {
    /** @type {Array<{ id: string, state: string, part: null, approval: null }>} */
    const extra = [];
    for (const [k, entry] of this.overlay) {
      if (!k.startsWith(`${machine}:`)) continue;
      const id = k.slice(machine.length + 1);
      if (!known.has(id) && this.turnOf.get(k) === turnId) extra.push({ id, state: entry.state, part: null, approval: null });
    }
    return extra;
  }

  /** The turn a part's or an approval's refusal concerns, when the log says. @param {string} machine @param {string | null} actorId */
  turnOfActor(machine, actorId) {
    if (!actorId) return null;
    if (machine === 'turn') return actorId;
    return this.turnOf.get(key(machine, actorId)) ?? null;
  }

  /**
   * The last transition of one actor, as the engine's inspect record gave it;
   * `null` for an actor that has not moved since the page opened.
   * @param {string} machine @param {string} id
   * @returns {Fired | null}
   */
  lastTransition(machine, id) {
    return this.inspected.get(key(machine, id)) ?? null;
  }

  /**
   * The most recent transition among several actors of one machine.
   * @param {string} machine @param {Array<{ id: string, state: string }>} actors
   * @returns {(Fired & { actorId: string }) | null}
   */
  latestAmong(machine, actors) {
    /** @type {(Fired & { actorId: string }) | null} */
    let latest = null;
    for (const actor of actors) {
      const fired = this.lastTransition(machine, actor.id);
      if (fired && (!latest || fired.threadSeq >= latest.threadSeq)) latest = { ...fired, actorId: actor.id };
    }
    return latest;
  }
}
