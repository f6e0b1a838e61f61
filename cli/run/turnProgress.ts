import type { ApprovalView, TurnView } from '../../domain/index.ts';
import type { LiveDelta } from '../../protocol/index.ts';
import { type TurnEvent, TurnEventFeed } from '../../client/index.ts';
import { visible } from '../terminalText.ts';
import { cutToWidth } from '../displayWidth.ts';

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

/**
 * How a tool call reads on one line: its name and what it touches, cut to
 * `maxColumns` columns. A tool with no known field for that (an MCP
 * tool's) shows its arguments as JSON: whoever approves it sees what it is given.
 */
export function toolLabel(name: string, input: unknown, maxColumns = 80): string {
  const fields = (input ?? {}) as Record<string, unknown>;
  // A sub-agent's call reads as who does what: `task explore: find where sessions are made`.
  const delegated = typeof fields.agent === 'string' ? [`${fields.agent}: ${String(fields.description ?? fields.prompt ?? '')}`] : [];
  const subject = [fields.command, fields.path, fields.pattern, ...delegated].find((value) => typeof value === 'string') as string | undefined;
  const shown = subject ?? (typeof input === 'object' && input !== null && Object.keys(input).length > 0 ? JSON.stringify(input) : undefined);
  const oneLine = shown === undefined ? undefined : visible(shown.replace(/\s+/g, ' '));
  return visible(oneLine ? `${name} ${cutToWidth(oneLine, maxColumns)}` : name);
}

/** What a terminal shows of one of a turn's events (nothing, for most). */
export function progressOf(event: TurnEvent): Progress[] {
  switch (event.type) {
    case 'text.delta':
      return [{ kind: 'text', partId: event.partId, text: event.text }];
    case 'reasoning.delta':
      return [{ kind: 'reasoning', partId: event.partId, text: event.text }];
    case 'tool.started':
      return [{ kind: 'toolStarted', partId: event.partId, label: toolLabel(event.name, event.input) }];
    case 'tool.finished': {
      const ok = event.state === 'completed';
      return [{ kind: 'toolEnded', partId: event.partId, label: toolLabel(event.name, event.input), ok, detail: ok ? (event.result ?? '') : (event.error ?? event.result ?? event.state) }];
    }
    case 'approval.asked':
      return event.approval.state === 'pending' ? [{ kind: 'approval', approval: event.approval }] : [];
    case 'activity': {
      const shown = shownActivities[event.kind];
      return shown ? [{ kind: 'note', text: shown(event.message) }] : [];
    }
    default:
      return [];
  }
}

/**
 * What is new of one turn for a terminal, from the turn's events (see
 * `TurnEventFeed`): text as it is typed, tool calls as they start and end,
 * approvals as they are asked, retries and repairs. Text is shown as it is
 * typed, from the live channel, and the log fills in whatever the live
 * channel did not bring; everything else comes from the committed log, so
 * what is shown is what was recorded.
 */
export class TurnProgress {
  private readonly feed: TurnEventFeed;

  /** `onEvent` hears each event the progress is made of, as it is made (`run --json` writes them). */
  constructor(
    turnId: string,
    threadId = '',
    private readonly onEvent?: (event: TurnEvent) => void,
  ) {
    this.feed = new TurnEventFeed(threadId, turnId);
  }

  /** A delta of the live channel: text of this turn shown at once. */
  live(delta: LiveDelta): Progress[] {
    return this.shown(this.feed.live(delta));
  }

  next(turn: TurnView): Progress[] {
    return this.shown(this.feed.next(turn));
  }

  private shown(events: TurnEvent[]): Progress[] {
    if (this.onEvent) for (const event of events) this.onEvent(event);
    return events.flatMap(progressOf);
  }
}
