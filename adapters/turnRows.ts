import { type ApprovalView, type DomainEvent, type PartView, type TurnView, isOpenPart } from '../domain/index.ts';

/**
 * How a turn is laid out on disk: its row holds the small fields, and the
 * large ones (texts, tool inputs and outputs) are pieces of their own, so a
 * commit into a turn writes what changed instead of re-encoding the turn.
 *
 * - `text` (a part's text) and `inputText` (a tool call's streamed input)
 *   only ever grow at their end (the projector appends deltas), so each
 *   commit adds one piece keyed by the offset it starts at, and reading
 *   concatenates them in key order. When the part settles its pieces are
 *   joined into one, so a finished turn reads back in a few gets.
 * - `output`, `input` (a tool call's parsed input), an approval's `input`
 *   and the text of input steered into the turn (`inboxText`, by input id)
 *   are set whole, at offset 0.
 */
export type PieceField = 'text' | 'inputText' | 'output' | 'input' | 'approvalInput' | 'inboxText';

/** Where a piece lives inside its turn: the part or approval it belongs to, the field, and the offset it starts at. */
export type PieceKey = [ownerId: string, field: PieceField, offset: number];

export type PieceWrite =
  /** Adds the text that follows what is stored. */
  | { op: 'append'; ownerId: string; field: PieceField; offset: number; text: string }
  /** Drops every piece of the field, then stores `value` whole (nothing for `null`). */
  | { op: 'replace'; ownerId: string; field: PieceField; value: unknown };

const appended = new Set<PieceField>(['text', 'inputText']);

/** Text a batch appended, by part and field: the deltas themselves, since slicing them off a long text would copy all of it. */
export type GrownText = Map<string, { text: string; inputText: string }>;

export function grownText(events: Iterable<{ event: DomainEvent }>): GrownText {
  const grown: GrownText = new Map();
  for (const { event } of events) {
    if (event.type !== 'part.delta' && event.type !== 'tool.inputDelta') continue;
    const part = grown.get(event.partId) ?? { text: '', inputText: '' };
    if (event.type === 'part.delta') part.text += event.text;
    else part.inputText += event.text;
    grown.set(event.partId, part);
  }
  return grown;
}

/** What a commit writes for one turn: the row without its large fields, and the pieces that changed. */
export function splitTurn(previous: TurnView | undefined, turn: TurnView, grown: GrownText = new Map()): { row: TurnView; writes: PieceWrite[] } {
  const writes: PieceWrite[] = [];
  const before = new Map<string, PartView>();
  if (previous) for (const message of previous.messages) for (const part of message.parts) before.set(part.id, part);
  const beforeApprovals = new Map<string, ApprovalView>(previous?.approvals.map((approval) => [approval.id, approval]));

  const thinPart = (part: PartView): PartView => {
    const old = before.get(part.id);
    const settles = old !== undefined && isOpenPart(old) && !isOpenPart(part);
    growing(writes, part.id, 'text', old?.text ?? '', part.text, grown.get(part.id)?.text, settles);
    if (!part.tool) return { ...part, text: '' };
    growing(writes, part.id, 'inputText', old?.tool?.inputText ?? '', part.tool.inputText, grown.get(part.id)?.inputText, settles);
    whole(writes, part.id, 'output', old?.tool ? old.tool.output : null, part.tool.output);
    whole(writes, part.id, 'input', old?.tool ? old.tool.input : null, part.tool.input);
    return { ...part, text: '', tool: { ...part.tool, inputText: '', output: null, input: null } };
  };
  const approvals = turn.approvals.map((approval) => {
    whole(writes, approval.id, 'approvalInput', beforeApprovals.get(approval.id)?.input ?? null, approval.input);
    return { ...approval, input: null };
  });
  const beforeInbox = new Map(previous?.inbox.map((item) => [item.id, item.text]));
  const inbox = turn.inbox.map((item) => {
    whole(writes, item.id, 'inboxText', beforeInbox.get(item.id) ?? null, item.text);
    return { ...item, text: '' };
  });
  const [user, assistant] = turn.messages;
  const row: TurnView = {
    ...turn,
    messages: [
      { ...user, parts: user.parts.map(thinPart) },
      { ...assistant, parts: assistant.parts.map(thinPart) },
    ],
    approvals,
    inbox,
  };
  return { row, writes };
}

function growing(writes: PieceWrite[], ownerId: string, field: PieceField, old: string, text: string, delta: string | undefined, settles: boolean): void {
  // A settled part is read far more often than it is written: its pieces become one.
  if (settles && text.length > 0) writes.push({ op: 'replace', ownerId, field, value: text });
  else if (text === old) return;
  else if (delta !== undefined && old.length + delta.length === text.length) writes.push({ op: 'append', ownerId, field, offset: old.length, text: delta });
  else if (text.length > old.length) writes.push({ op: 'append', ownerId, field, offset: old.length, text: text.slice(old.length) });
  // Text that did not grow at its end (never written by the projector today) is stored whole rather than trusted.
  else writes.push({ op: 'replace', ownerId, field, value: text });
}

function whole(writes: PieceWrite[], ownerId: string, field: PieceField, old: unknown, value: unknown): void {
  if (value !== old) writes.push({ op: 'replace', ownerId, field, value });
}

/** The turn as it was committed: its row with the pieces put back (given in key order). */
export function joinTurn(row: TurnView, pieces: Iterable<{ key: PieceKey; value: unknown }>): TurnView {
  const fields = new Map<string, Partial<Record<PieceField, unknown>>>();
  for (const { key, value } of pieces) {
    const [ownerId, field] = key;
    const owner = fields.get(ownerId) ?? {};
    owner[field] = appended.has(field) ? ((owner[field] as string | undefined) ?? '') + (value as string) : value;
    fields.set(ownerId, owner);
  }
  // Rows written before turns had an inbox and a compaction count lack them.
  const current = { ...row, inbox: row.inbox ?? [], compactions: row.compactions ?? 0 };
  if (fields.size === 0) return current;
  const fullPart = (part: PartView): PartView => {
    const found = fields.get(part.id);
    if (!found) return part;
    const text = (found.text as string | undefined) ?? part.text;
    if (!part.tool) return { ...part, text };
    return {
      ...part,
      text,
      tool: {
        ...part.tool,
        inputText: (found.inputText as string | undefined) ?? part.tool.inputText,
        output: 'output' in found ? (found.output as string) : part.tool.output,
        input: 'input' in found ? found.input : part.tool.input,
      },
    };
  };
  const [user, assistant] = row.messages;
  return {
    ...current,
    messages: [
      { ...user, parts: user.parts.map(fullPart) },
      { ...assistant, parts: assistant.parts.map(fullPart) },
    ],
    approvals: current.approvals.map((approval) => {
      const found = fields.get(approval.id);
      return found && 'approvalInput' in found ? { ...approval, input: found.approvalInput } : approval;
    }),
    inbox: current.inbox.map((item) => {
      const found = fields.get(item.id);
      return found && 'inboxText' in found ? { ...item, text: found.inboxText as string } : item;
    }),
  };
}
