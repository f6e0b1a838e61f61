const numberAt = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const literalAt = /true|false|null/y;

/**
 * Where the first JSON syntax error in `text` is, as a character offset
 * (`text.length` when the text ends too soon), or `null` when it is JSON.
 * JSON.parse says where only for some mistakes and, for others, quotes the
 * text around them instead, which in a configuration file may be a secret.
 */
export function jsonErrorOffset(text: string): number | null {
  let at = 0;
  const fail = (): never => {
    throw at;
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  const string = () => {
    at++;
    while (at < text.length) {
      const char = text[at]!;
      if (char === '"') {
        at++;
        return;
      }
      if (char === '\\') {
        at++;
        if (text[at] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(at + 1, at + 5))) fail();
          at += 4;
        } else if (!'"\\/bfnrt'.includes(text[at] ?? 'x')) fail();
      } else if (char < ' ') fail();
      at++;
    }
    fail();
  };
  const match = (pattern: RegExp) => {
    pattern.lastIndex = at;
    if (!pattern.test(text)) fail();
    at = pattern.lastIndex;
  };
  const value = (): void => {
    space();
    const char = text[at];
    if (char === '{' || char === '[') {
      const close = char === '{' ? '}' : ']';
      at++;
      space();
      if (text[at] === close) {
        at++;
        return;
      }
      for (;;) {
        if (close === '}') {
          space();
          if (text[at] !== '"') fail();
          string();
          space();
          if (text[at] !== ':') fail();
          at++;
        }
        value();
        space();
        if (text[at] === ',') at++;
        else if (text[at] === close) {
          at++;
          return;
        } else fail();
      }
    }
    if (char === '"') return string();
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) return match(numberAt);
    return match(literalAt);
  };
  try {
    value();
    space();
    if (at < text.length) fail();
    return null;
  } catch (offset) {
    if (typeof offset !== 'number') throw offset;
    return offset;
  }
}
