import { createHash } from 'node:crypto';
import type { AssistantPart, PartView, ProviderMessage, ProviderRequest, RequestHeader, ThreadView } from '../../domain/index.ts';

function assistantPart(part: PartView): AssistantPart | null {
  if (part.tool) return { kind: 'toolCall', callId: part.tool.callId, name: part.tool.name, input: part.tool.input ?? {} };
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
  }
  return messages;
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
  return sha(`${headerDigest(header)}\n${JSON.stringify(messages)}`);
}

/** A digest of the conversation alone, as steps recorded before headers were (their logs still check). */
export function messagesDigest(messages: readonly ProviderMessage[]): string {
  return sha(JSON.stringify(messages));
}

/** The request of the next model call as the log holds it: its latest header and the conversation it derives. */
export function deriveRequest(view: ThreadView, header: HeaderFields): ProviderRequest {
  return { model: header.model, system: header.system, tools: header.tools, messages: deriveMessages(view) };
}
