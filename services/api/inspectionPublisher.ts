import { type Bus, type Logger, errorFields, silentLogger } from '../../domain/index.ts';
import { MSGPACK, type Subjects, encode } from '../../bus/index.ts';
import type { Engine } from '../engine/engine.ts';

/**
 * Publishes what the lifecycle machines did for each command on
 * `<prefix>.v1.inspect.<threadId>` (msgpack, the thread's sequence after the
 * command in `turnloom-seq`): the live chart view. One message per command,
 * on the thread's own subject, so watching one thread never carries another's.
 */
export function publishInspections(engine: Engine, bus: Bus, subjects: Subjects, log: Logger = silentLogger): () => void {
  return engine.onInspection((inspection) => {
    try {
      bus.publish(subjects.inspect(inspection.threadId), encode(inspection, MSGPACK), {
        headers: { 'content-type': MSGPACK, 'turnloom-seq': String(inspection.threadSeq) },
      });
    } catch (error) {
      // Inspection is a view; the command stands whatever happens to its record.
      log.warn({ ...errorFields(error), threadId: inspection.threadId, threadSeq: inspection.threadSeq }, 'could not publish an inspection');
    }
  });
}
