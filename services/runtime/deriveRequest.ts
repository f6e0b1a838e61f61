import { type Hash, createHash } from 'node:crypto';
import type { AssistantPart, PartView, ProviderMessage, ProviderRequest, RequestHeader, ThreadView, TurnView } from '../../domain/index.ts';

function assistantPart(part: PartView): AssistantPart | null {
  // A copy: the message is frozen (see `turnMessages`), the view's own input is not ours to freeze.
  if (part.tool) return { kind: 'toolCall', callId: part.tool.callId, name: part.tool.name, input: structuredClone(part.tool.input ?? {}) };
  // Redacted thinking has no text, only its opaque data (kept as the signature): it still goes back.
  if (part.text === '' && !(part.kind === 'reasoning' && part.signature)) return null;
  return part.kind === 'reasoning' ? { kind: 'reasoning', text: part.text, signature: part.signature } : { kind: 'text', text: part.text };
}

/** What the model reads as a tool's result: its output, its failure, or why it never ran. */
function toolResult(part: PartView): ProviderMessage | null {
  if (!part.tool) return null;
  const isError = part.state !== 'completed';
  const output = part.tool.output ?? (part.error ? `The tool did not run: ${part.error}.` : 'The tool returned nothing.');
  return { role: 'tool', callId: part.tool.callId, name: part.tool.name, output, isError };
}

/**
 * The conversation as the model must see it, derived only from the thread's
 * durable log (through its fold): every turn's user message, then each
 * step's answer and its tool results, with input steered into the turn
 * before the step that claimed it. Since a compaction (or a hook) replaced
 * the context, what came before its point is read as the replacement. Steps that failed (an attempt that was
 * retried) and turns a revert undid are kept in the log but are not part of
 * the conversation.
 */
export function deriveMessages(view: ThreadView): ProviderMessage[] {
  const context = view.context;
  const messages: ProviderMessage[] = context ? [...context.base] : [];
  const first = context ? view.turnIds.indexOf(context.fromTurnId) : 0;
  for (const turnId of view.turnIds.slice(Math.max(0, first))) {
    const turn = view.turns[turnId]!;
    if (turn.revertedAt !== null) continue;
    // The context's base already holds what its first turn said before `fromStep`.
    const from = context && turnId === context.fromTurnId ? context.fromStep : 0;
    for (const message of from === 0 ? turnMessages(turn, turnId !== view.openTurnId) : messagesOfTurn(turn, from)) messages.push(message);
  }
  return messages;
}

/** What one turn adds to the conversation from step `from` on. */
function messagesOfTurn(turn: TurnView, from: number): ProviderMessage[] {
  const messages: ProviderMessage[] = [];
  const [input, ...claimed] = turn.messages[0].parts;
  if (from === 0) messages.push({ role: 'user', text: input?.text ?? '' });
  const steered = claimed.filter((part) => part.step > from);
  // Input steered in mid-turn is read where it was claimed: before the answer of the step that first carried it.
  const steeredUpTo = (step: number) => {
    while (steered.length > 0 && steered[0]!.step <= step) messages.push({ role: 'user', text: steered.shift()!.text });
  };
  for (const step of turn.steps) {
    if (step.step < from) continue;
    steeredUpTo(step.step);
    if (step.outcome === 'error' || step.outcome === null) continue;
    const parts = turn.messages[1].parts.filter((part) => part.step === step.step);
    const answer = parts.map(assistantPart).filter((part): part is AssistantPart => part !== null);
    if (answer.length > 0) messages.push({ role: 'assistant', parts: answer });
    for (const part of parts) {
      const result = toolResult(part);
      if (result) messages.push(result);
    }
  }
  steeredUpTo(Number.MAX_SAFE_INTEGER);
  return messages;
}

/**
 * A turn's whole part of the conversation, kept by its row. A fold replaces
 * a turn's row whenever the turn changes and never edits one, so the same
 * row gives the same messages: each step derives (and digests) only the
 * turns that changed, not the whole thread again. The messages are frozen,
 * because they are shared: between derivations, and between a worker and
 * an engine in one process, where a change made in place would reach both
 * sides of the digest check.
 */
const byRow = new WeakMap<TurnView, readonly ProviderMessage[]>();
/** Messages made and frozen here: the only ones a digest may take for the same ones later (see `conversationDigest`). */
const frozen = new WeakSet<ProviderMessage>();

/** Messages of turns that were settled when derived: a row that changes after that is a revert or a summary, rare enough to start hashing over for. */
const settled = new WeakSet<ProviderMessage>();

function turnMessages(turn: TurnView, isSettled: boolean): readonly ProviderMessage[] {
  let messages = byRow.get(turn);
  if (!messages) {
    messages = messagesOfTurn(turn, 0).map((message) => {
      frozen.add(deepFreeze(message));
      if (isSettled) settled.add(message);
      return message;
    });
    byRow.set(turn, messages);
  }
  return messages;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Where hashing a conversation got to: past `prefix` and all of `messages`
 * (`end`), and past its first `head` messages, those of settled turns
 * (`atHead`): the open turn's messages are made anew each step (its row
 * changed), so the next step carries on from there.
 */
interface HashedPrefix {
  prefix: string;
  messages: readonly ProviderMessage[];
  end: Hash;
  head: number;
  atHead: Hash | null;
}

/** The last conversation hashed, by its first message: a thread's next step hashes only what its conversation added. */
const hashedByFirst = new WeakMap<ProviderMessage, HashedPrefix>();

/**
 * `sha(prefix + JSON.stringify(messages))`, the same digest, but carried on
 * from where the last one of the same conversation left off, when this one
 * begins with the same frozen messages in the same order: a step of a long
 * thread no longer hashes its whole conversation again. Only messages made
 * and frozen here are taken for the same ones; anything else could have
 * changed in place, and is hashed.
 */
function conversationDigest(prefix: string, messages: readonly ProviderMessage[]): string {
  const first = messages[0];
  const last = first && frozen.has(first) ? hashedByFirst.get(first) : undefined;
  // Only a state past the same prefix (the same header) can be carried on from.
  const kept = last?.prefix === prefix ? last : undefined;
  let same = 0;
  if (kept) while (same < kept.messages.length && same < messages.length && kept.messages[same] === messages[same]) same++;
  let from = 0;
  let hash: Hash;
  if (kept && same === kept.messages.length) [from, hash] = [same, kept.end.copy()];
  else if (kept?.atHead && same >= kept.head) [from, hash] = [kept.head, kept.atHead.copy()];
  else hash = createHash('sha256').update(`${prefix}[`);
  let head = 0;
  while (head < messages.length && settled.has(messages[head]!)) head++;
  let atHead = head === from ? hash.copy() : head < from && kept?.head === head ? kept.atHead : null;
  for (let index = from; index < messages.length; index++) {
    hash.update(index === 0 ? JSON.stringify(messages[index]) : `,${JSON.stringify(messages[index])}`);
    if (index + 1 === head) atHead = hash.copy();
  }
  if (first && messages.every((message) => frozen.has(message))) hashedByFirst.set(first, { prefix, messages: [...messages], end: hash.copy(), head, atHead });
  return hash.update(']').digest('hex').slice(0, 32);
}

/** What a header's digest covers: the request less its conversation. */
export type HeaderFields = Omit<RequestHeader, 'digest'>;

const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** The digest of a header's fields, in a fixed order, so the same header always has the same digest. */
export function headerDigest({ provider, model, system, tools, params }: HeaderFields): string {
  return sha(JSON.stringify(params === undefined ? [provider, model, system, tools] : [provider, model, system, tools, params]));
}

/**
 * A digest of the whole request a model call sends: its header and its
 * conversation. The worker records it with `step.started`; the engine
 * derives both from its own log and compares, so what the model is sent is
 * what the log says, across processes.
 */
export function requestDigest(header: HeaderFields, messages: readonly ProviderMessage[]): string {
  return conversationDigest(`${headerDigest(header)}\n`, messages);
}

/** A digest of the conversation alone, as steps recorded before headers were (their logs still check). */
export function messagesDigest(messages: readonly ProviderMessage[]): string {
  return conversationDigest('', messages);
}

/** The request of the next model call as the log holds it: its latest header and the conversation it derives. */
export function deriveRequest(view: ThreadView, header: HeaderFields): ProviderRequest {
  return { model: header.model, system: header.system, tools: header.tools, messages: deriveMessages(view) };
}
