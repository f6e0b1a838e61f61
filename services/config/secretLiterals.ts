/**
 * Whether a configuration value holds a credential written out rather than
 * named: a config file is copied, committed and pasted into issues, so a key
 * belongs in the environment and the file names the variable. The patterns
 * are the common key shapes (OpenAI and Anthropic `sk-…`, GitHub, Slack,
 * AWS) and an `Authorization` scheme followed by a literal; `${VAR}`
 * references are taken out first, so `Bearer ${TOKEN}` passes.
 */
export function looksLikeSecret(value: string): boolean {
  const literal = value.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, '');
  if (/^\s*(Bearer|Basic|Token)\s+\S/i.test(literal)) return true;
  return secretShapes.some((shape) => shape.test(literal));
}

const secretShapes: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{8,}/,
  /\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/,
  /\bAKIA[0-9A-Z]{16}\b/,
];

/** Key names that only ever hold a credential's value, refused wherever they appear. */
export const secretKeyPattern = /^(api[_-]?key|apikey|secret|token|password|auth[_-]?token|access[_-]?token)$/i;
