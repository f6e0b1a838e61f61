import { z } from 'zod';
import { isInbox } from '../../bus/index.ts';
import { TurnloomError } from '../../domain/index.ts';
import { type Scope, scopes } from '../../protocol/scopes.ts';

export { type Scope, scopes };

export interface Principal {
  name: string;
  scopes: ReadonlySet<Scope>;
  /** The inbox space its answers and watches go to (`_INBOX_client` covers `_INBOX_client.…`); `null`: any space no principal is bound to. */
  inboxPrefix: string | null;
}

/** One subject token, as a NATS user's `_INBOX_<user>.>` permission names it. */
export const inboxPrefixPattern = /^_INBOX[A-Za-z0-9_-]*$/;

/** `{ "tokens": { "<secret>": { "principal": "alice", "scopes": ["read", "approve"], "inboxPrefix": "_INBOX_alice" } } }` */
export const authConfigSchema = z
  .object({
    tokens: z.record(
      z.string().min(16, 'tokens must be at least 16 characters'),
      z
        .object({
          principal: z.string().min(1).max(100),
          scopes: z.array(z.enum(scopes)).min(1),
          inboxPrefix: z.string().regex(inboxPrefixPattern, 'an inbox prefix is one subject token starting with _INBOX').optional(),
        })
        .strict(),
    ),
  })
  .strict();
export type AuthConfig = z.infer<typeof authConfigSchema>;

const anonymous: Principal = { name: 'local', scopes: new Set(scopes), inboxPrefix: null };

/**
 * Maps the `authorization: Bearer <token>` header to a principal. With no
 * configuration every caller is the local user with every scope (the
 * embedded default, where nothing outside the process can connect).
 */
export class Authenticator {
  private readonly byToken: Map<string, Principal> | null;
  /** Inbox spaces bound to a principal: nobody else's answers go there. */
  private readonly bound: ReadonlySet<string>;

  constructor(config: AuthConfig | null) {
    this.byToken = config
      ? new Map(
          Object.entries(config.tokens).map(([token, { principal, scopes: granted, inboxPrefix }]) => [token, { name: principal, scopes: new Set(granted), inboxPrefix: inboxPrefix ?? null }]),
        )
      : null;
    this.bound = new Set([...(this.byToken?.values() ?? [])].flatMap(({ inboxPrefix }) => (inboxPrefix ? [inboxPrefix] : [])));
  }

  get open(): boolean {
    return this.byToken === null;
  }

  /** The principal a request's token names, or `null` when it names none (no token, an unknown one). */
  identify(headers: Readonly<Record<string, string>>): Principal | null {
    if (!this.byToken) return anonymous;
    const token = bearerToken(headers);
    return (token && this.byToken.get(token)) || null;
  }

  principalFor(headers: Readonly<Record<string, string>>): Principal {
    const principal = this.identify(headers);
    if (!principal) throw new TurnloomError('forbidden', bearerToken(headers) ? 'unknown token' : 'missing "authorization: Bearer <token>" header');
    return principal;
  }

  /**
   * Whether something for `caller` (an answer, a watch's deliveries) may be
   * published on `subject`. NATS checks a request's subject against its
   * publisher's permissions but never its reply subject, so the server
   * would otherwise publish wherever a caller points it. Only inboxes, and
   * only in the caller's own space: its principal's `inboxPrefix`, or, for a
   * caller bound to none (or unknown), a space no principal is bound to.
   */
  mayReplyTo(caller: Principal | null, subject: string): boolean {
    if (!isInbox(subject)) return false;
    const space = subject.slice(0, subject.indexOf('.'));
    return caller?.inboxPrefix ? space === caller.inboxPrefix : !this.bound.has(space);
  }
}

const bearerToken = (headers: Readonly<Record<string, string>>): string | undefined => /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];

export function requireScope(principal: Principal, scope: Scope, method: string): void {
  if (!principal.scopes.has(scope)) {
    throw new TurnloomError('forbidden', `${principal.name} lacks the "${scope}" scope needed for ${method}`, { principal: principal.name, scope, method });
  }
}
