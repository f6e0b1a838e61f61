/**
 * A bash command line as the permission rules read it: the simple commands
 * it is made of, and what in it, if anything, the split does not vouch for.
 */
export interface CommandLine {
  /** The simple commands, trimmed, in order; empty ones are left out. */
  commands: string[];
  /** Why no allow rule may vouch for the line (the first such thing found), or null. */
  unvouched: string | null;
}

const blank = /[ \t]/;
/** A descriptor duplicated or closed (`2>&1`, `>&2`, `<&0`, `>&-`), ending where a word would: it writes no file. */
const duplication = /^[<>]&(?:\d+|-)(?=$|[ \t\n;&|])/;
/** `NAME=value command`: bash runs `command`, which a rule for `NAME…` never named. */
const assignment = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/;

/**
 * Splits `line` where bash would run one command after another: at `;`,
 * `&`, `&&`, `||`, `|`, `|&` and newlines outside quotes and escapes.
 * Conservative by design: it does not parse bash, it refuses to vouch for
 * anything it would have to parse to be sure of — substitutions (`$(…)`,
 * backticks, `<(…)`, `>(…)`, `${…}`), redirections other than a descriptor
 * duplication, subshells and groups (`(`, `)`, `{`, `}`), here-documents,
 * comments, a leading variable assignment, unbalanced quotes and a trailing
 * backslash. Those still split the line (at brackets too), so a deny rule
 * can match the commands in them. Pure.
 */
export function splitCommandLine(line: string): CommandLine {
  const commands: string[] = [];
  let unvouched: string | null = null;
  let current = '';
  let wordStart = true;
  let quote: 'none' | 'single' | 'double' | 'ansi' = 'none';
  const refuse = (why: string): void => {
    unvouched ??= why;
  };
  const cut = (): void => {
    const command = current.trim();
    if (command !== '') {
      if (assignment.test(command)) refuse('a variable assignment before a command');
      commands.push(command);
    }
    current = '';
    wordStart = true;
  };

  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    const next = line[i + 1];
    if (quote === 'single') {
      current += char;
      if (char === "'") quote = 'none';
      continue;
    }
    if (quote === 'ansi' || quote === 'double') {
      if (char === '\\' && next !== undefined) {
        if (!(quote === 'double' && next === '\n')) current += char + next;
        i++;
        continue;
      }
      current += char;
      if (quote === 'ansi' && char === "'") quote = 'none';
      if (quote === 'double') {
        if (char === '"') quote = 'none';
        else if (char === '`' || (char === '$' && (next === '(' || next === '{'))) refuse('a substitution inside double quotes');
      }
      continue;
    }
    switch (char) {
      case '\\':
        if (next === undefined) refuse('a trailing backslash');
        i++;
        // Bash drops an escaped newline before it reads any word, so the line goes on as if it were not there.
        if (next === '\n') break;
        current += char + (next ?? '');
        wordStart = false;
        break;
      case "'":
        quote = 'single';
        current += char;
        wordStart = false;
        break;
      case '"':
        quote = 'double';
        current += char;
        wordStart = false;
        break;
      case '$':
        if (next === "'" || next === '"') {
          quote = next === "'" ? 'ansi' : 'double';
          current += char + next;
          i++;
        } else if (next === '(' || next === '{') {
          refuse(next === '(' ? 'a command substitution $(…)' : 'a parameter expansion ${…}');
          cut();
          i++;
          break;
        } else current += char;
        wordStart = false;
        break;
      case '`':
        refuse('a command substitution `…`');
        cut();
        break;
      case '(':
      case ')':
      case '{':
      case '}':
        refuse(`a subshell, group or brace expansion (${char})`);
        cut();
        break;
      case '#':
        if (wordStart) refuse('a comment');
        current += char;
        wordStart = false;
        break;
      case '<':
      case '>': {
        const dup = duplication.exec(line.slice(i));
        if (dup) {
          current += dup[0];
          i += dup[0].length - 1;
          break;
        }
        refuse(next === '(' ? 'a process substitution' : char === '<' && next === '<' ? 'a here-document' : 'a redirection');
        current += char;
        wordStart = true;
        break;
      }
      case ';':
      case '\n':
        cut();
        break;
      case '&':
        if (next === '>') {
          refuse('a redirection');
          current += char;
          break;
        }
        if (next === '&') i++;
        cut();
        break;
      case '|':
        if (next === '|' || next === '&') i++;
        cut();
        break;
      default:
        current += char;
        wordStart = blank.test(char);
    }
  }
  if (quote !== 'none') refuse('an unbalanced quote');
  cut();
  return { commands, unvouched };
}
