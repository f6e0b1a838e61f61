import { type Bus, type Logger, errorFields, silentLogger } from '../../domain/index.ts';
import { MSGPACK, type Subjects, encode } from '../../bus/index.ts';
import type { Engine } from '../engine/engine.ts';

/**
 * Publishes every committed event on `<prefix>.v1.evt.<threadId>`, msgpack,
 * with its per-thread sequence in the `turnloom-seq` header. Publishing
 * happens after the commit; a subscriber that misses some catches up with
 * `thread.events`.
 */
export function publishCommittedEvents(engine: Engine, bus: Bus, subjects: Subjects, log: Logger = silentLogger): () => void {
  return engine.onCommitted((events) => {
    for (const event of events) {
      try {
        bus.publish(subjects.events(event.threadId), encode(event, MSGPACK), {
          headers: { 'content-type': MSGPACK, 'turnloom-seq': String(event.threadSeq) },
        });
      } catch (error) {
        // The event is durable; clients find it through thread.events.
        log.warn({ ...errorFields(error), threadId: event.threadId, threadSeq: event.threadSeq }, 'could not publish an event');
      }
    }
  });
}
