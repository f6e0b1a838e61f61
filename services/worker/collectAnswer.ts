import { type ProviderEvent, ProviderError, type Usage } from '../../domain/index.ts';

/** What a provider's stream came to, for a call that wants text back (a summary, a title), not a turn. */
export interface Answer {
  text: string;
  model: string | null;
  usage: Usage | null;
}

/**
 * Reads the stream into `answer` as it goes (so what arrived is there even
 * if the call is cut off): the answer's text segments only, never its
 * reasoning. A provider's failure is thrown as a `ProviderError`.
 */
export async function collectAnswer(stream: AsyncIterable<ProviderEvent>, answer: Answer): Promise<void> {
  const textSegments = new Set<string>();
  for await (const event of stream) {
    if (event.type === 'turn.started') answer.model = event.model;
    else if (event.type === 'segment.started' && event.kind === 'text') textSegments.add(event.segmentId);
    else if (event.type === 'text.delta' && textSegments.has(event.segmentId)) answer.text += event.text;
    else if (event.type === 'usage') answer.usage = event.usage;
    else if (event.type === 'turn.failed') throw new ProviderError(event.error);
  }
}
