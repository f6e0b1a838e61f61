const MAX_ID = 128;
const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, as 16 hex digits: pure JS, so the fold runs anywhere (a browser too). */
function hash64(text: string): string {
  let hash = FNV_OFFSET;
  for (let index = 0; index < text.length; index++) hash = ((hash ^ BigInt(text.charCodeAt(index))) * FNV_PRIME) & MASK;
  return hash.toString(16).padStart(16, '0');
}

/**
 * The id of something that belongs to `parent` (a part of a turn, the
 * approval of a part): `<parent>-<suffix>` while that is a valid id, else the
 * parent is shortened and a hash of the whole keeps it unique. So every id
 * the system derives is itself a valid id, however long the one it came from.
 */
export function childId(parent: string, suffix: string): string {
  const plain = `${parent}-${suffix}`;
  if (plain.length <= MAX_ID) return plain;
  const tail = `_${hash64(plain)}-${suffix}`;
  return `${parent.slice(0, MAX_ID - tail.length)}${tail}`;
}

