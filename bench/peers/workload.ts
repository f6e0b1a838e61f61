import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The one turn every contender runs, each through its own model interface:
 * a first step streams 2,000 characters in 100 chunks and calls one cheap
 * tool, a second step streams 500 characters. The fake models answer at
 * once (unless a kill test slows their chunks down).
 */
export const CHUNK_CHARS = 20;
export const FIRST_TEXT = 'Looking into it now. '.repeat(100).slice(0, 2_000);
export const SECOND_TEXT = 'The lookup says ok. '.repeat(25).slice(0, 500);
export const ANSWER_CHARS = FIRST_TEXT.length + SECOND_TEXT.length;
export const TOOL_NAME = 'lookup';
export const TOOL_INPUT = { q: 'a' } as const;
export const TOOL_RESULT = 'ok';
export const USER_TEXT = 'look it up';

export const chunksOf = (text: string): string[] => Array.from({ length: Math.ceil(text.length / CHUNK_CHARS) }, (_, n) => text.slice(n * CHUNK_CHARS, (n + 1) * CHUNK_CHARS));

/** How one run of the workload behaves; the defaults are the timed workload's. */
export interface WorkloadOptions {
  /** Pause before each text chunk after the first, in ms (kill tests slow the stream down to kill it in its middle). */
  chunkDelayMs: number;
  /** The tool the model calls. */
  tool: () => Promise<string>;
  /** Hears the characters each step's fake model has streamed so far, as it streams them. */
  onStreamed?: (chars: number) => void;
}

export const timedWorkload: WorkloadOptions = { chunkDelayMs: 0, tool: async () => TOOL_RESULT };

/** How long the kill tests' tool takes, and the pause between chunks when a stream is to be killed in its middle. */
export const KILL_TOOL_MS = 300;
export const KILL_CHUNK_DELAY_MS = 20;
/**
 * How much of the first step has streamed when it is killed: 1.6 s into it
 * at a chunk every 20 ms, past the first second, so a runtime that writes a
 * streaming answer about once a second (turnloom) has had one chance to.
 */
export const KILL_AT_CHARS = 1_600;

/** A tool that leaves a line in `path` each time it runs, then takes `ms` (what the kill tests count and kill in). */
export const countedTool =
  (path: string, ms: number, onStart?: () => void) =>
  async (): Promise<string> => {
    appendFileSync(path, 'ran\n');
    onStart?.();
    await sleep(ms);
    return TOOL_RESULT;
  };

/** A contender's data folder after a kill, read back and carried on the way its users would. */
export interface Recovery {
  /** Characters of the killed turn's answer that were durable when the new process opened the data. */
  keptChars: number;
  /** How the turn ended after carrying on (`completed`, `interrupted`…), and how. */
  outcome: string;
}

/** One contender opened on a data folder. */
export interface Session {
  /** A new thread's id (made in the store when the library keeps threads there). */
  newThread(): Promise<string>;
  /** Runs one turn on `thread` and checks its answer is whole. */
  turn(thread: string): Promise<void>;
  /** After a kill: what of `thread`'s open turn was kept, then carries on as the library's users do. */
  recover(thread: string): Promise<Recovery>;
  close(): Promise<void>;
}

export interface Contender {
  key: 'turnloom' | 'langgraph' | 'langgraphFull' | 'agents';
  label: string;
  /** Opens on `dir`, which it may create files in. */
  open(dir: string, workload: WorkloadOptions): Promise<Session>;
  /** Bytes its durable data takes in `dir`, once closed (0: it keeps nothing). */
  dataBytes(dir: string): number;
}

/** Fails loudly when a contender's answer is not the workload's, so a broken one cannot look fast. */
export function checkAnswer(label: string, streamed: number, state = 'completed'): void {
  if (state !== 'completed' || streamed !== ANSWER_CHARS) throw new Error(`${label}: the turn ended ${state} with ${streamed} characters streamed, not ${ANSWER_CHARS}`);
}
