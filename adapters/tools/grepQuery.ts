/** One grep, as the grep tool hands it to ripgrep. */
export interface GrepQuery {
  pattern: string;
  ignoreCase: boolean;
  /** Only files matching this glob (the tools' syntax), tested on their name, or on their path (relative to `real`) when it has a `/`, as ripgrep's `--glob` does; `!` first leaves them out instead. */
  glob: string | null;
  /** The real path of the file or folder to search. */
  real: string;
  /** `real` as the model named it, which starts every path shown. */
  relative: string;
  isFolder: boolean;
  /** Stop after this many matches. */
  limit: number;
  signal: AbortSignal;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

export interface GrepFound {
  matches: GrepMatch[];
  /** Whether the search stopped at the limit with matches left. */
  more: boolean;
  /** A file named outright that matched but is binary (a NUL byte at `offset`), whose lines are not shown; else null. */
  binary: { offset: number } | null;
}
