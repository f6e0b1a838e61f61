import type { Usage } from './usage.ts';

/**
 * Side work: short model calls a worker makes after a turn settled, apart
 * from it: a title for the thread after its first completed turn, and a
 * one-line summary of each completed turn that changed files.
 */
export const sideTaskKinds = ['title', 'summary'] as const;
export type SideTaskKind = (typeof sideTaskKinds)[number];

/** The longest line each kind may come to, in characters: a title fits a list, a summary one line of a log. */
export const sideTextLimits: Readonly<Record<SideTaskKind, number>> = { title: 120, summary: 300 };

/** What one piece of side work came to: its line, or why there is none. */
export type SideTaskOutcome = { kind: 'done'; text: string } | { kind: 'failed'; error: string };

/** One piece of side work done for a completed turn, as the worker reports it to the engine. */
export interface SideTaskReport {
  kind: SideTaskKind;
  /** The completed turn it was done for. */
  turnId: string;
  /** The model that answered, as the provider named it. */
  model: string | null;
  usage: Usage | null;
  outcome: SideTaskOutcome;
}
