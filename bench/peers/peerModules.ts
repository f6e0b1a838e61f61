/**
 * The peers live in bench/node_modules, installed on first use, so the main
 * typecheck cannot count on their types being there: each contender loads
 * them by a name TypeScript does not resolve and describes the little it
 * uses itself. Resolved from this folder, so bench/node_modules is found.
 */
export const importPeer = <T>(name: string): Promise<T> => import(name) as Promise<T>;
