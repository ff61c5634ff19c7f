/**
 * better-sqlite3 as this package uses it: the slice of its API it calls (the package ships no
 * TypeScript types) and the one way to open a database: the SQLite store's shared `batches.sqlite`
 * (the job table and the OpenAI file table live in the same file and wait the same time on each
 * other's locks), and the small lock files of file-lock.ts.
 *
 * Two major versions, one per Node line, with the same API, both optional dependencies (an install
 * whose SQLite build fails, with no GitHub to download a binary from and no Node headers to compile
 * against, still installs: the library and `decide batch` need no SQLite):
 * - better-sqlite3 12 (`better-sqlite3`) wraps its objects in Node's own ObjectWrap.
 *   Since Node 24.19 that class's destructor needs a live Node environment, which a garbage
 *   collection outside JavaScript (an idle GC) or the process's teardown does not have: a
 *   collected statement aborts the process ("Assertion failed: (env) != nullptr" in
 *   RemoveEnvironmentCleanupHook) when the addon was compiled against Node 24.19's headers or later.
 * - better-sqlite3 13 (`better-sqlite3-napi`, an npm alias) is built on
 *   Node-API, ships its binaries in the package (no install script), and needs Node 22: it
 *   crashes on Node 20, where npm leaves it out (its engines say so).
 * So Node 22 and later open databases with 13, Node 20 with 12; 12 stands in on Node 22 to 24.18
 * when 13 was left out (--omit=optional), and never later, where it would abort the process.
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

/** The first Node major better-sqlite3 13 runs on. */
const NAPI_DRIVER_NODE_MAJOR = 22;
/** The first Node on which better-sqlite3 12, compiled there, aborts the process (see the header). */
const OBJECT_WRAP_ABORTS_FROM: readonly [number, number] = [24, 19];

/** better-sqlite3 is not installed, or not compiled (its install script did not run). */
export class SqliteUnavailableError extends Error {}

function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

function nodeAtLeast([major, minor]: readonly [number, number], version = process.versions.node): boolean {
  const [have, haveMinor] = version.split('.').map(Number) as [number, number];
  return have > major || (have === major && haveMinor >= minor);
}

/**
 * Which installed package opens databases on this Node (see the header); throws
 * SqliteUnavailableError, naming the fix, where none can.
 */
export function sqliteDriverPackage(version = process.versions.node): 'better-sqlite3-napi' | 'better-sqlite3' {
  const onNapiNode = nodeAtLeast([NAPI_DRIVER_NODE_MAJOR, 0], version);
  if (onNapiNode && installed('better-sqlite3-napi')) return 'better-sqlite3-napi';
  if (onNapiNode && nodeAtLeast(OBJECT_WRAP_ABORTS_FROM, version)) {
    throw new SqliteUnavailableError(
      `the SQLite batch store needs the optional dependency better-sqlite3-napi on Node ${version}, and it is not installed ` +
        '(an install with --omit=optional leaves it out): install this package without --omit=optional',
    );
  }
  if (installed('better-sqlite3')) return 'better-sqlite3';
  throw new SqliteUnavailableError(
    `the SQLite batch store needs the optional dependency ${onNapiNode ? 'better-sqlite3-napi' : 'better-sqlite3'}, and it is not installed ` +
      (onNapiNode
        ? '(an install with --omit=optional leaves it out): install this package without --omit=optional'
        : '(left out by --omit=optional, or dropped when its install script could neither download a binary from GitHub nor compile ' +
          "SQLite with Node's headers, from nodejs.org or npm_config_nodedir): install it with `npm install better-sqlite3`, allowing its script"),
  );
}

/**
 * Opens (creating if needed) the SQLite database `file`. better-sqlite3's compiled binding comes
 * from its own install script, which does not run under `npm install --ignore-scripts` or an
 * install-script policy that does not allow it; better-sqlite3 then fails here listing a dozen
 * paths it tried and naming no fix, so the error says what to do.
 */
export function openSqlite(file: string, { busyTimeoutMs = BUSY_TIMEOUT_MS } = {}): SqliteDatabase {
  const Sqlite = require(sqliteDriverPackage()) as DatabaseConstructor;
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
