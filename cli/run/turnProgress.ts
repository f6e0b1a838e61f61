import type { ApprovalView, PartView, TurnView } from '../../domain/index.ts';
import type { LiveDelta } from '../../protocol/index.ts';
import { visible } from '../terminalText.ts';

/** What a terminal shows next of a running turn. */
export type Progress =
  | { kind: 'text' | 'reasoning'; partId: string; text: string }
  | { kind: 'toolStarted'; partId: string; label: string }
  | { kind: 'toolEnded'; partId: string; label: string; ok: boolean; detail: string }
  | { kind: 'approval'; approval: ApprovalView }
  /** Something the turn went through that a person should see as it happens: a retry, a repair (a failure is in the summary). */
  | { kind: 'note'; text: string };

/** Activities a person sees as they happen, and how each reads. */
const shownActivities: Record<string, (message: string) => string> = {
  retry: (message) => `↻ retrying: ${message}`,
  repair: (message) => `⚠ ${message}`,
};

const ended = (part: PartView) => ['completed', 'error', 'interrupted'].includes(part.state);

/** How a tool call reads on one line: its name and what it touches. */
export function toolLabel(name: string, input: unknown): string {
  const fields = (input ?? {}) as Record<string, unknown>;
  // A sub-agent's call reads as who does what: `task explore: find where sessions are made`.
  const delegated = typeof fields.agent === 'string' ? [`${fields.agent}: ${String(fields.description ?? fields.prompt ?? '')}`] : [];
  const subject = [fields.command, fields.path, fields.pattern, ...delegated].find((value) => typeof value === 'string') as string | undefined;
  const oneLine = subject === undefined ? undefined : visible(subject.replace(/\s+/g, ' '));
  return visible(oneLine ? `${name} ${oneLine.length > 80 ? `${oneLine.slice(0, 79)}…` : oneLine}` : name);
}

/**
 * Turns successive views of one turn into what is new since the last one:
 * text as it grows, tool calls as they start and end, approvals as they are
 * asked. Text is shown as it is typed, from the live channel, and the log
 * fills in whatever the live channel did not bring (the log is written
 * about once a second); everything else comes from the committed log, so
 * what is shown is what was recorded.
 */
export class TurnProgress {
  /** Each text part's text as shown so far: the log's and the live channel's agree on every prefix. */
  private readonly shown = new Map<string, string>();
  /** Each text part's text as the live channel brought it. */
  private readonly typed = new Map<string, string>();
  private readonly running = new Set<string>();
  private readonly closed = new Set<string>();
  private readonly asked = new Set<string>();
  private noted = 0;

  constructor(private readonly turnId: string) {}

  /** A delta of the live channel: text of this turn shown at once. */
  live(delta: LiveDelta): Progress[] {
    if (delta.turnId !== this.turnId || (delta.kind !== 'text' && delta.kind !== 'reasoning')) return [];
    const typed = (this.typed.get(delta.partId) ?? '') + delta.text;
    this.typed.set(delta.partId, typed);
    return this.grown(delta.partId, delta.kind, typed);
  }

  /** What `text` adds to what is shown of a part; nothing when it is behind (the live channel is ahead of the log) or elsewhere. */
  private grown(partId: string, kind: 'text' | 'reasoning', text: string): Progress[] {
    const shown = this.shown.get(partId) ?? '';
    if (text.length <= shown.length || !text.startsWith(shown)) return [];
    this.shown.set(partId, text);
    return [{ kind, partId, text: text.slice(shown.length) }];
  }

  next(turn: TurnView): Progress[] {
    const out: Progress[] = [];
    for (const part of turn.messages[1].parts) {
      if (part.kind !== 'tool') {
        out.push(...this.grown(part.id, part.kind, part.text));
        continue;
      }
      const label = toolLabel(part.tool!.name, part.tool!.input);
      if (part.state === 'running.tool.executing' && !this.running.has(part.id)) {
        this.running.add(part.id);
        out.push({ kind: 'toolStarted', partId: part.id, label });
      }
      if (ended(part) && !this.closed.has(part.id)) {
        this.closed.add(part.id);
        const detail = part.state === 'completed' ? (part.tool!.output ?? '') : (part.error ?? part.tool!.output ?? part.state);
        out.push({ kind: 'toolEnded', partId: part.id, label, ok: part.state === 'completed', detail });
      }
    }
    for (const approval of turn.approvals) {
      if (approval.state !== 'pending' || this.asked.has(approval.id)) continue;
      this.asked.add(approval.id);
      out.push({ kind: 'approval', approval });
    }
    for (const activity of turn.activities.slice(this.noted)) {
      const shown = shownActivities[activity.kind];
      if (shown) out.push({ kind: 'note', text: shown(activity.message) });
    }
    this.noted = turn.activities.length;
    return out;
  }
}
