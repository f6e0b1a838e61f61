import { type ProviderRequest, type SideTaskKind, sideTextLimits } from '../../domain/index.ts';
import type { SideTask } from './sideWorkDue.ts';

const instructions: Record<SideTaskKind, string> = {
  title:
    'Give a title to the conversation that opens with the user message below, for a list of conversations. ' +
    'Reply with the title alone: at most 8 words, no quotes, no full stop at the end.',
  summary:
    'Summarise the code change below in one line of at most 20 words, saying what it does, for a change log. ' +
    'Reply with that line alone.',
};

/** A short call: what it is given is cut to this many characters (a prompt says what it is about early; a diff lists its files first). */
const maxInputChars: Record<SideTaskKind, number> = { title: 2_000, summary: 12_000 };

/** Cuts to at most `max` code units, never through a surrogate pair. */
function cut(text: string, max: number, mark = ''): string {
  if (text.length <= max) return text;
  let end = max - mark.length;
  if (/[\ud800-\udbff]/.test(text[end - 1] ?? '')) end -= 1;
  return `${text.slice(0, end)}${mark}`;
}

/** The model call for a side task, through the same adapter and model as its turn, with no tools. */
export function sideWorkRequest(task: SideTask, model: string | null): ProviderRequest {
  const input = cut(task.input, maxInputChars[task.kind], '\n[… cut]');
  return { model, system: instructions[task.kind], messages: [{ role: 'user', text: input }], tools: [], sideWork: task.kind };
}

/**
 * The model's answer as the line the engine takes: whitespace and control
 * characters folded into single spaces, a label or wrapping quotes a model
 * adds anyway dropped, cut to the kind's limit. `null`: nothing was left.
 */
export function sideLineOf(kind: SideTaskKind, answer: string): string | null {
  let line = answer.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  line = line.replace(/^(title|summary)\s*:\s*/i, '');
  line = line.replace(/^(["'`*“‘]+)(.+?)(["'`*”’]+)$/u, '$2').trim();
  if (kind === 'title') line = line.replace(/[.。]+$/u, '');
  return line === '' ? null : cut(line, sideTextLimits[kind], '…');
}
