import { describe, expect, it } from 'vitest';
import { HeaderCache } from '../../bus/headerCache.ts';

const text = new TextDecoder();

describe('HeaderCache', () => {
  it('builds the headers of a record once, by content, and their bytes once', () => {
    const cache = new HeaderCache();
    const first = cache.headersFor({ 'content-type': 'application/msgpack' })!;
    // A fresh record with the same entries: the same headers, not a rebuilt copy.
    expect(cache.headersFor({ 'content-type': 'application/msgpack' })).toBe(first);
    expect(cache.headersFor({ 'content-type': 'application/json' })).not.toBe(first);
    expect(cache.headersFor({ 'content-type': 'application/msgpack', 'turnloom-kind': 'live' })).not.toBe(first);
    const bytes = (first as unknown as { encode(): Uint8Array }).encode();
    expect(text.decode(bytes)).toBe('NATS/1.0\r\ncontent-type: application/msgpack\r\n\r\n');
    expect((first as unknown as { encode(): Uint8Array }).encode()).toBe(bytes);
  });

  it('gives no headers for no record or an empty one, refuses a line break every time, and stays right past its size', () => {
    const cache = new HeaderCache();
    expect(cache.headersFor(undefined)).toBeUndefined();
    expect(cache.headersFor({})).toBeUndefined();
    expect(() => cache.headersFor({ 'x-bad': 'one\r\ntwo' })).toThrow(/cannot contain/);
    expect(() => cache.headersFor({ 'x-bad': 'one\r\ntwo' })).toThrow(/cannot contain/);
    for (let seq = 0; seq < 3_000; seq++) expect(cache.headersFor({ 'turnloom-seq': String(seq) })!.get('turnloom-seq')).toBe(String(seq));
    // Records that vary per message start the tree over rather than grow it: 1,024 nodes and the path being walked.
    expect((cache as unknown as { nodes: number }).nodes).toBeLessThanOrEqual(1_026);
    const again = cache.headersFor({ 'Turnloom-Kind': 'event' })!;
    expect(again.get('turnloom-kind')).toBe('event');
    expect(again.keys()).toEqual(['turnloom-kind']);
  });
});
