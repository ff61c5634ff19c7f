/**
 * better-sqlite3 as this package uses it: the slice of its API it calls (the package ships no
 * TypeScript types) and the one way to open a database: the SQLite store's shared `batches.sqlite`
 * (the job table and the OpenAI file table live in the same file and wait the same time on each
 * other's locks), and the small lock files of file-lock.ts.
 */
import { createRequire } from 'node:module';

export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  close(): void;
  readonly open: boolean;
}

type DatabaseConstructor = new (file: string, options?: { timeout?: number }) => SqliteDatabase;

/** How long a statement waits for another connection's write lock before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

const require = createRequire(import.meta.url);

/** better-sqlite3 is installed but not compiled (its install script did not run). */
export class SqliteUnavailableError extends Error {}

/**
 * Opens (creating if needed) the SQLite database `file`. better-sqlite3's compiled binding comes
 * from its own install script, which does not run under `npm install --ignore-scripts` or an
 * install-script policy that does not allow it; better-sqlite3 then fails here listing a dozen
 * paths it tried and naming no fix, so the error says what to do.
 */
export function openSqlite(file: string, { busyTimeoutMs = BUSY_TIMEOUT_MS } = {}): SqliteDatabase {
  const Sqlite = require('better-sqlite3') as DatabaseConstructor;
  try {
    return new Sqlite(file, { timeout: busyTimeoutMs });
  } catch (err) {
    if (!/Could not locate the bindings file/.test(String((err as Error).message))) throw err;
    throw new SqliteUnavailableError(
      'the SQLite batch store needs better-sqlite3 compiled, and its install script has not run ' +
        '(npm install --ignore-scripts, or an install-script policy without it). Allow it ' +
        '("allowScripts": {"better-sqlite3": true} in your package.json) and run `npm rebuild better-sqlite3`',
      { cause: err },
    );
  }
}

/**
 * Adds the columns a table gained after its first release to a database made before them (each
 * `[name, definition]`, e.g. `['expires_at', 'INTEGER']`); columns already there are left alone.
 */
export function addMissingColumns(db: SqliteDatabase, table: string, columns: ReadonlyArray<readonly [name: string, definition: string]>): void {
  const have = new Set((db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name));
  for (const [name, definition] of columns) if (!have.has(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${definition}`);
}
