import { Packr } from 'msgpackr';
import { TurnloomError, wellFormed } from '../domain/index.ts';

export type ContentType = 'application/msgpack' | 'application/json';

export const MSGPACK: ContentType = 'application/msgpack';
export const JSON_TYPE: ContentType = 'application/json';

// Plain maps, no record extension: any msgpack library in any language reads these.
const packr = new Packr({ useRecords: false, mapsAsObjects: true });
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The content type of a payload: the `content-type` header when present;
 * otherwise JSON if it starts with `{` (never a valid msgpack map), else msgpack.
 */
export function contentTypeOf(headers: Readonly<Record<string, string>>, data: Uint8Array): ContentType {
  const declared = headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (declared === MSGPACK || declared === JSON_TYPE) return declared;
  if (declared) throw new TurnloomError('invalid_payload', `unsupported content-type "${declared}"; use ${JSON_TYPE} or ${MSGPACK}`);
  const first = data.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  return first === undefined || first === 0x7b ? JSON_TYPE : MSGPACK;
}

/** Encodes a payload; lone surrogates go out as U+FFFD (msgpack would write bytes that are not UTF-8). */
export function encode(value: unknown, contentType: ContentType): Uint8Array {
  const whole = wellFormed(value);
  return contentType === JSON_TYPE ? new TextEncoder().encode(JSON.stringify(whole)) : packr.pack(whole);
}

/**
 * Decodes a payload; malformed bytes are an `invalid_payload` error, never a
 * crash. An empty payload is `{}`. Lone surrogates (which JSON escapes can
 * carry) come out as U+FFFD: see `wellFormed`.
 */
export function decode(data: Uint8Array, contentType: ContentType): unknown {
  if (data.length === 0) return {};
  try {
    return wellFormed(contentType === JSON_TYPE ? JSON.parse(utf8.decode(data)) : packr.unpack(data));
  } catch (error) {
    throw new TurnloomError('invalid_payload', `malformed ${contentType === JSON_TYPE ? 'JSON' : 'msgpack'} payload: ${(error as Error).message}`);
  }
}
