import { type MsgHdrs, MsgHdrsImpl } from '@nats-io/transport-node';

interface Node {
  readonly next: Map<string, Node>;
  headers: MsgHdrs | undefined;
}

/** Past this many nodes the tree starts over: records that vary per message (a sequence number) must not grow it for ever. */
const MAX_NODES = 1_024;

/** nats.js asks a message's headers for their bytes on every publish; these headers work them out once. */
class EncodedOnce extends MsgHdrsImpl {
  private bytes: Uint8Array | undefined;

  override encode(): Uint8Array {
    return (this.bytes ??= super.encode());
  }
}

const node = (): Node => ({ next: new Map(), headers: undefined });

/**
 * The NATS headers of a header record, built and encoded once per distinct
 * record. Nearly every message carries one of a few records (a content type,
 * a watch's kind), and building and encoding their headers cost more than
 * the rest of a small publish. A record is found by its entries in order,
 * through a tree of maps, so no key has to be built to look it up. The
 * headers are shared by every message that carries the record: nothing may
 * change them after they are built.
 */
export class HeaderCache {
  private root = node();
  private nodes = 0;

  headersFor(record: Readonly<Record<string, string>> | undefined): MsgHdrs | undefined {
    if (!record) return undefined;
    const keys = Object.keys(record);
    if (keys.length === 0) return undefined;
    if (this.nodes > MAX_NODES) {
      this.root = node();
      this.nodes = 0;
    }
    let at = this.root;
    for (const key of keys) at = this.child(this.child(at, key), record[key]!);
    // A record NATS refuses (a value with a line break) throws here every time, as before: nothing is kept for it.
    return (at.headers ??= build(record, keys));
  }

  private child(parent: Node, token: string): Node {
    let next = parent.next.get(token);
    if (!next) {
      next = node();
      parent.next.set(token, next);
      this.nodes += 1;
    }
    return next;
  }
}

function build(record: Readonly<Record<string, string>>, keys: readonly string[]): MsgHdrs {
  const headers = new EncodedOnce();
  for (const key of keys) headers.set(key.toLowerCase(), record[key]!);
  return headers;
}
