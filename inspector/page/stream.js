// @ts-check
/** One thread's server-sent events from the relay (docs/inspector.md, "The thread stream"). */

/**
 * @typedef {{ seq: number, threadId: string, threadSeq: number, commandId: string, at: number, event: { type: string, [key: string]: any }, cut?: boolean }} StoredEvent
 * @typedef {{ machine: string, actorId: string, from: string | null, event: string, to: string, threadSeq: number, domainEvent: string }} ActorTransition
 * @typedef {{ machine: string, actorId: string | null, state: string, event: string, reason: string }} RefusedEvent
 * @typedef {{ threadId: string, commandId: string, command: string, at: number, outcome: 'accepted' | 'rejected', threadSeq: number,
 *   transitions: ActorTransition[], refused: RefusedEvent[] }} Inspection
 * @typedef {{ turnId: string, step: number, partId: string, kind: 'text' | 'reasoning' | 'toolInput' | 'toolOutput', text: string }} LiveDelta
 * @typedef {{
 *   event(event: StoredEvent): void,
 *   caughtUp(seq: number): void,
 *   live(delta: LiveDelta): void,
 *   inspect(inspection: Inspection): void,
 *   relay(bus: string): void,
 *   failed(code: string, message: string): void,
 *   status(status: 'catching up' | 'live' | 'reconnecting' | 'connecting' | 'closed'): void,
 * }} StreamHandlers
 */

/**
 * Opens the stream after `after`. The browser's EventSource reconnects by
 * itself and sends the last `id` it saw, so the relay resumes where it broke.
 * @param {string} threadId
 * @param {number} after
 * @param {StreamHandlers} on
 * @returns {{ close(): void }}
 */
export function openThreadStream(threadId, after, on) {
  const source = new EventSource(`/stream/threads/${encodeURIComponent(threadId)}?after=${after}`);
  let closed = false;
  on.status('connecting');
  /** @param {string} name @param {(data: any) => void} handle */
  const listen = (name, handle) =>
    source.addEventListener(name, (message) => {
      if (closed) return;
      let data;
      try {
        data = JSON.parse(/** @type {MessageEvent} */ (message).data);
      } catch {
        return;
      }
      handle(data);
    });
  listen('event', (data) => on.event(data));
  listen('caughtUp', (data) => {
    on.status('live');
    on.caughtUp(data.seq);
  });
  // One `live` event is one message of the live subject: an array of deltas, in order.
  listen('live', (data) => {
    if (Array.isArray(data)) for (const delta of data) on.live(delta);
  });
  listen('inspect', (data) => on.inspect(data));
  listen('relay', (data) => on.relay(String(data.bus)));
  listen('failed', (data) => {
    // The relay ends the stream after this; reconnecting would only fail again.
    close();
    on.failed(String(data.code ?? 'failed'), String(data.message ?? ''));
  });
  source.onopen = () => {
    if (!closed) on.status('catching up');
  };
  source.onerror = () => {
    if (closed) return;
    on.status(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  };
  function close() {
    if (closed) return;
    closed = true;
    source.close();
  }
  return { close };
}
