/** What a token may do: read threads, operate them (start turns, revert), answer approvals, or reach every principal's threads. */
export const scopes = ['read', 'operate', 'approve', 'admin'] as const;
export type Scope = (typeof scopes)[number];
