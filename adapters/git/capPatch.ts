/** Keeps a patch displayable: at most maxChars of it, then a note saying how much was left out. */
export function capPatch(patch: string, maxChars: number): { patch: string; truncated: boolean } {
  if (patch.length <= maxChars) return { patch, truncated: false };
  // Never split a surrogate pair: half an emoji is not valid text.
  const end = maxChars > 0 && /[\uD800-\uDBFF]/.test(patch[maxChars - 1]!) ? maxChars - 1 : maxChars;
  const kept = patch.slice(0, end);
  return { patch: `${kept}${kept.endsWith('\n') || kept === '' ? '' : '\n'}[... ${patch.length - end} characters of diff cut ...]\n`, truncated: true };
}
