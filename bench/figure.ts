/**
 * One measured figure of `npm run bench`: a value, what it was compared with
 * in the same run, and the target the ratio must meet. `ratio` is always
 * value ÷ comparison, so a target says which side of it is good.
 */
export interface Figure {
  /** Stable key in `bench/results.json` (`engineCommand`, `liveP99`, …). */
  key: string;
  title: string;
  value: number;
  unit: string;
  comparison: { label: string; value: number } | null;
  ratio: number | null;
  /** `ratio <= 1.3`, `ratio >= 0.5`, or an absolute bound on `value`; `null`: reported only. */
  target: Target | null;
  meetsTarget: boolean | null;
  /** What else the run saw (sizes, rounds, the spread), one line. */
  note?: string;
}

export type Target = { on: 'ratio' | 'value'; op: '<=' | '>='; bound: number };

/** A named group of figures, run as `npm run bench -- <name>`. */
export interface Suite {
  name: string;
  /**
   * `smoke`: tiny sizes, one round, targets not judged: only proves the code
   * still runs (part of `npm test`). `onFigure`: told of each figure as soon
   * as it is measured, so the table fills in while a long suite runs.
   */
  run(options: { smoke: boolean; onFigure?: (figure: Figure) => void }): Promise<Figure[]>;
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** The value below which `p` percent of the samples fall (nearest rank). */
export const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

/**
 * Measures `subject` and `baseline` in alternating rounds (baseline first,
 * then subject, `rounds` times) so that whatever else the machine does
 * weighs on both alike; returns the median of each.
 */
export async function interleaved(rounds: number, baseline: () => Promise<number>, subject: () => Promise<number>): Promise<{ baseline: number; subject: number; rounds: number }> {
  const base: number[] = [];
  const measured: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    base.push(await baseline());
    measured.push(await subject());
  }
  return { baseline: median(base), subject: median(measured), rounds };
}

/**
 * `interleaved` for any number of subjects: each round measures every one of
 * them in turn, in the order given; returns each one's samples by key.
 */
export async function inRounds<K extends string, T>(rounds: number, keys: readonly K[], measure: (key: K) => Promise<T>): Promise<Record<K, T[]>> {
  const samples = Object.fromEntries(keys.map((key) => [key, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < rounds; round += 1) for (const key of keys) samples[key].push(await measure(key));
  return samples;
}

/** A figure compared with a baseline measured in the same run. */
export function compared(
  fields: { key: string; title: string; unit: string; value: number; comparison: { label: string; value: number }; target: Target | null; note?: string },
  smoke: boolean,
): Figure {
  const ratio = fields.comparison.value === 0 ? null : fields.value / fields.comparison.value;
  return { ...fields, ratio, meetsTarget: smoke || !fields.target ? null : judge(fields.target, fields.target.on === 'ratio' ? ratio : fields.value) };
}

/** A figure with no comparison: reported, or held to an absolute bound. */
export function absolute(fields: { key: string; title: string; unit: string; value: number; target: Target | null; note?: string }, smoke: boolean): Figure {
  return { ...fields, comparison: null, ratio: null, meetsTarget: smoke || !fields.target ? null : judge(fields.target, fields.value) };
}

function judge(target: Target, measured: number | null): boolean | null {
  if (measured === null) return null;
  return target.op === '<=' ? measured <= target.bound : measured >= target.bound;
}

export const describeTarget = (target: Target | null): string => (target ? `${target.on === 'ratio' ? '×' : ''} ${target.op} ${target.bound}`.trim() : 'report');
