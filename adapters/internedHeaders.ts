import type { Database } from 'lmdb';
import type { DomainEvent, RequestHeader, ThreadHead } from '../domain/index.ts';

/**
 * A request header (the rendered system prompt and the tools, a few KB) is
 * the largest value of a short thread, and the same for every thread an
 * agent runs with the same tools and prompt. The store keeps each distinct
 * one once, under its digest (which the engine has checked against its
 * fields before anything is committed), and the rows that name it — the
 * thread row, whose copy was rewritten with every command, and the log's
 * `request.header` events — hold `{ ref: digest }`. Rows written before
 * hold the header itself and are read as they are.
 */
interface HeaderRef {
  ref: string;
}

type Stored<T> = T | HeaderRef;

const isRef = (header: object): header is HeaderRef => 'ref' in header && !('system' in header);

export class InternedHeaders {
  constructor(private readonly headers: Database<RequestHeader, string>) {}

  /** Inside a write transaction: the header stored once, a reference returned. */
  private intern(header: RequestHeader): HeaderRef {
    if (!this.headers.doesExist(header.digest)) this.headers.put(header.digest, header);
    return { ref: header.digest };
  }

  private resolve(stored: Stored<RequestHeader>): RequestHeader {
    if (!isRef(stored)) return stored;
    const header = this.headers.get(stored.ref);
    if (!header) throw new Error(`request header ${stored.ref} is named but not stored`);
    return header;
  }

  headRow(head: ThreadHead): ThreadHead {
    if (!head.header) return head;
    const { seq, ...header } = head.header;
    return { ...head, header: { ...this.intern(header), seq } as unknown as ThreadHead['header'] };
  }

  head(row: ThreadHead): ThreadHead {
    if (!row.header || !isRef(row.header)) return row;
    return { ...row, header: { ...this.resolve(row.header), seq: row.header.seq } };
  }

  eventRow(event: DomainEvent): DomainEvent {
    if (event.type !== 'request.header') return event;
    return { ...event, header: this.intern(event.header) as unknown as RequestHeader };
  }

  event(row: DomainEvent): DomainEvent {
    if (row.type !== 'request.header' || !isRef(row.header)) return row;
    return { ...row, header: this.resolve(row.header) };
  }
}
