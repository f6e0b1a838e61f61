/** The longest glob taken: matching costs the glob's length for each character of each path, and runs without a break. */
export const maxGlobChars = 1_000;

/** The index of the `}` closing the `{` at `open`, or -1. */
function closingBrace(glob: string, open: number): number {
  let depth = 0;
  for (let at = open; at < glob.length; at += 1) {
    if (glob[at] === '{') depth += 1;
    else if (glob[at] === '}' && --depth === 0) return at;
  }
  return -1;
}

/** The comma-separated alternatives of a brace's inside, nested braces kept whole. */
function alternatives(inside: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let at = 0; at < inside.length; at += 1) {
    if (inside[at] === '{') depth += 1;
    else if (inside[at] === '}') depth -= 1;
    else if (inside[at] === ',' && depth === 0) {
      parts.push(inside.slice(start, at));
      start = at + 1;
    }
  }
  return [...parts, inside.slice(start)];
}

/** What a state of the automaton takes from the path: one character (code point) that passes, or nothing (a jump). */
type Takes = { char: string } | 'anyButSlash' | 'any' | null;

/**
 * A glob compiled to a nondeterministic automaton (Thompson's
 * construction), run by keeping the set of states it may be in: the time is
 * the length of the path times the size of the glob, whatever the glob. A
 * backtracking RegExp takes exponential time on `*a*a*a…*b` against a long
 * run of `a`s, and cannot be interrupted meanwhile.
 */
class Automaton {
  readonly takes: Takes[] = [];
  /** Where a state goes once it took its character. */
  readonly next: number[] = [];
  /** Where a state also is, taking nothing. */
  readonly jumps: number[][] = [];

  state(takes: Takes = null): number {
    this.takes.push(takes);
    this.next.push(-1);
    this.jumps.push([]);
    return this.takes.length - 1;
  }

  /** Appends the states for `glob` after `from`; returns the state it ends in. */
  compile(glob: string, from: number): number {
    let end = from;
    for (let at = 0; at < glob.length; at += 1) {
      const char = glob[at]!;
      if (char === '*' && glob[at + 1] === '*') {
        const wholeSegment = (at === 0 || glob[at - 1] === '/') && glob[at + 2] === '/';
        // `a/**/b` must match `a/b` too: the folders in between may be none.
        end = wholeSegment ? this.optional(end, (start) => this.take({ char: '/' }, this.repeat(start, 'any'))) : this.repeat(end, 'any');
        at += wholeSegment ? 2 : 1;
      } else if (char === '*') {
        end = this.repeat(end, 'anyButSlash');
      } else if (char === '?') {
        end = this.take('anyButSlash', end);
      } else if (char === '{' && closingBrace(glob, at) !== -1) {
        const close = closingBrace(glob, at);
        const join = this.state();
        for (const alternative of alternatives(glob.slice(at + 1, close))) {
          const start = this.state();
          this.jumps[end]!.push(start);
          this.jumps[this.compile(alternative, start)]!.push(join);
        }
        end = join;
        at = close;
      } else {
        const codePoint = String.fromCodePoint(glob.codePointAt(at)!);
        end = this.take({ char: codePoint }, end);
        at += codePoint.length - 1;
      }
    }
    return end;
  }

  private take(takes: Takes, from: number): number {
    const taking = this.state(takes);
    this.jumps[from]!.push(taking);
    const after = this.state();
    this.next[taking] = after;
    return after;
  }

  /** Any number of `takes`, none included. */
  private repeat(from: number, takes: Takes): number {
    const loop = this.state();
    this.jumps[from]!.push(loop);
    const taking = this.state(takes);
    this.jumps[loop]!.push(taking);
    this.next[taking] = loop;
    return loop;
  }

  /** What `build` appends after a start of its own, or nothing. */
  private optional(from: number, build: (start: number) => number): number {
    const start = this.state();
    this.jumps[from]!.push(start);
    const end = build(start);
    this.jumps[from]!.push(end);
    return end;
  }

}

const passes = (takes: Takes, char: string): boolean => (takes === 'any' ? true : takes === 'anyButSlash' ? char !== '/' : takes !== null && takes.char === char);

/**
 * A glob as a test over `/`-separated relative paths: `**` spans folders,
 * `*` and `?` stay within one, `{a,b}` is either. Brackets are literal, so
 * paths like `app/[id]/page.tsx` can be written as they are. `?` is one
 * character (a code point, as ripgrep counts it).
 */
export function globMatcher(glob: string): (path: string) => boolean {
  const automaton = new Automaton();
  const start = automaton.state();
  const accept = automaton.compile(glob.replace(/^\.?\//, ''), start);
  // Which states were reached at the current character: a set with no allocation per character.
  const seenAt = new Int32Array(automaton.takes.length).fill(-1);
  const reach = (states: number[], from: number, at: number): void => {
    const pending = [from];
    while (pending.length > 0) {
      const state = pending.pop()!;
      if (seenAt[state] === at) continue;
      seenAt[state] = at;
      states.push(state);
      pending.push(...automaton.jumps[state]!);
    }
  };
  return (path) => {
    seenAt.fill(-1);
    let current: number[] = [];
    reach(current, start, 0);
    let at = 0;
    for (const char of path) {
      at += 1;
      const next: number[] = [];
      for (const state of current) if (passes(automaton.takes[state]!, char)) reach(next, automaton.next[state]!, at);
      if (next.length === 0) return false;
      current = next;
    }
    return current.includes(accept);
  };
}
