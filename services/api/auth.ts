import { z } from 'zod';
import { TurnloomError } from '../../domain/index.ts';

export const scopes = ['read', 'operate', 'approve', 'admin'] as const;
export type Scope = (typeof scopes)[number];

export interface Principal {
  name: string;
  scopes: ReadonlySet<Scope>;
}

/** `{ "tokens": { "<secret>": { "principal": "alice", "scopes": ["read", "approve"] } } }` */
export const authConfigSchema = z
  .object({
    tokens: z.record(z.string().min(16, 'tokens must be at least 16 characters'), z.object({ principal: z.string().min(1).max(100), scopes: z.array(z.enum(scopes)).min(1) }).strict()),
  })
  .strict();
export type AuthConfig = z.infer<typeof authConfigSchema>;

const anonymous: Principal = { name: 'local', scopes: new Set(scopes) };

/**
 * Maps the `authorization: Bearer <token>` header to a principal. With no
 * configuration every caller is the local user with every scope (the
 * embedded default, where nothing outside the process can connect).
 */
export class Authenticator {
  private readonly byToken: Map<string, Principal> | null;

  constructor(config: AuthConfig | null) {
    this.byToken = config
      ? new Map(Object.entries(config.tokens).map(([token, { principal, scopes: granted }]) => [token, { name: principal, scopes: new Set(granted) }]))
      : null;
  }

  get open(): boolean {
    return this.byToken === null;
  }

  principalFor(headers: Readonly<Record<string, string>>): Principal {
    if (!this.byToken) return anonymous;
    const token = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
    const principal = token ? this.byToken.get(token) : undefined;
    if (!principal) throw new TurnloomError('forbidden', token ? 'unknown token' : 'missing "authorization: Bearer <token>" header');
    return principal;
  }
}

export function requireScope(principal: Principal, scope: Scope, method: string): void {
  if (!principal.scopes.has(scope)) {
    throw new TurnloomError('forbidden', `${principal.name} lacks the "${scope}" scope needed for ${method}`, { principal: principal.name, scope, method });
  }
}
