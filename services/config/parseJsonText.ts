import { type Node, type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';

/** Strict JSON, or JSON with comments and trailing commas (as VS Code's settings are written). */
export type JsonDialect = 'json' | 'jsonc';

/** Where text stops being JSON, and why, in words that never quote it (a secret may sit near the mistake). */
export interface JsonSyntaxError {
  /** From 1; the column counts characters. */
  line: number;
  column: number;
  /** `comma expected`, `it ends too soon (close brace expected)`, `it is empty`. */
  problem: string;
}

export type ParsedJson = { ok: true; value: unknown } | { ok: false; error: JsonSyntaxError };

/** `PropertyNameExpected` → `property name expected`. */
const inWords = (error: ParseError) =>
  printParseErrorCode(error.error)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();

/** The value a parsed node holds. Object keys become own properties, as JSON.parse makes them: `"__proto__"` is a key, never the prototype. */
function valueOf(node: Node): unknown {
  if (node.type === 'object') return Object.fromEntries((node.children ?? []).map((property) => [property.children![0]!.value as string, valueOf(property.children![1]!)]));
  if (node.type === 'array') return (node.children ?? []).map(valueOf);
  return node.value;
}

/**
 * JSON text parsed by jsonc-parser, or its first syntax error as a line,
 * a column and words. JSON.parse says where only for some mistakes and
 * quotes the text around others; a configuration or a file named by
 * mistake (`--auth /etc/shadow`) must not be printed. A leading byte-order
 * mark, which some editors write, is skipped.
 */
export function parseJsonText(text: string, dialect: JsonDialect): ParsedJson {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const errors: ParseError[] = [];
  const tree = parseTree(body, errors, { allowTrailingComma: dialect === 'jsonc', disallowComments: dialect === 'json', allowEmptyContent: false });
  const first = errors[0];
  if (first === undefined && tree !== undefined) return { ok: true, value: valueOf(tree) };
  const offset = first?.offset ?? 0;
  const before = body.slice(0, offset).split('\n');
  const problem = body.trim() === '' ? 'it is empty' : offset >= body.trimEnd().length ? `it ends too soon (${first ? inWords(first) : 'value expected'})` : first ? inWords(first) : 'value expected';
  return { ok: false, error: { line: before.length, column: before.at(-1)!.length + 1, problem } };
}
