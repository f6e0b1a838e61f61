import type { TurnloomClient } from '../../client/index.ts';
import type { RequestContext, RequestHeader } from '../../domain/index.ts';

/** A header as a turn's steps were sent it: from `fromStep` on, until the next; `recordedIn` is the turn whose step first sent it (an earlier one when it did not change). */
export type TurnHeader = Omit<RequestHeader, 'digest'> & { digest: string; fromStep: number; recordedIn: string };

/** What each of a turn's model calls was told beyond the conversation, as the log recorded it (`request.context`, `request.header`). */
export interface TurnRequest {
  context: RequestContext | null;
  headers: TurnHeader[];
}

/**
 * Every turn's request record, read from the thread's events a page at a
 * time: a worker records a header only when it first appears or changes,
 * so each turn starts with the one in force before it, replaced from the
 * step where a new one was recorded.
 */
export async function turnRequests(client: TurnloomClient, threadId: string): Promise<Map<string, TurnRequest>> {
  const requests = new Map<string, TurnRequest>();
  let current: TurnHeader | null = null;
  const of = (turnId: string): TurnRequest => {
    let request = requests.get(turnId);
    if (!request) requests.set(turnId, (request = { context: null, headers: current ? [{ ...current, fromStep: 0 }] : [] }));
    return request;
  };
  for (let after = 0; ; ) {
    const { events } = await client.call('thread.events', { threadId, after });
    if (events.length === 0) return requests;
    for (const { event } of events) {
      if (event.type === 'turn.requested') of(event.turnId);
      else if (event.type === 'request.context') of(event.turnId).context = event.context;
      else if (event.type === 'request.header') {
        const request = of(event.turnId);
        current = { ...event.header, fromStep: event.step, recordedIn: event.turnId };
        request.headers = [...request.headers.filter((header) => header.fromStep < event.step), current];
      }
    }
    after = events.at(-1)!.threadSeq;
  }
}
