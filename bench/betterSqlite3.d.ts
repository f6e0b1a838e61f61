// The little of better-sqlite3 the benchmark uses; it lives in bench/node_modules,
// outside the main install, so the main typecheck cannot see its own types.
declare module 'better-sqlite3' {
  interface Statement {
    run(...params: unknown[]): { changes: number };
    get(...params: unknown[]): Record<string, unknown> | undefined;
    all(...params: unknown[]): Array<Record<string, unknown>>;
  }
  interface Database {
    pragma(source: string): unknown;
    exec(source: string): void;
    prepare(source: string): Statement;
    transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
    close(): void;
  }
  const Database: new (path: string) => Database;
  export default Database;
}
