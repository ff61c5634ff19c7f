/**
 * Which backend a process opens, the one file that names both: Postgres (pg/) when a database URL
 * is given (the option, else DECIDE_DATABASE_URL), else the embedded SQLite store under the data dir
 * (sqlite/), for the batch jobs and the uploaded files alike. The Postgres code is
 * loaded only when used, and its packages (pg, pg-boss) are optional peer dependencies: a service
 * that keeps the SQLite default installs neither (pg-boss declares Node >= 22.12; it runs on the
 * Node 20 this package supports, tested here).
 */
import type { BatchStore, FileStore, StoreContext } from './ports.js';

export interface StoreSelection {
  /** postgres://... ; default DECIDE_DATABASE_URL; neither: SQLite under the data dir. */
  databaseUrl?: string;
  /** Environment read for DECIDE_DATABASE_URL and DECIDE_BATCH_LEASE_SECONDS; default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The database URL in force, or undefined for SQLite. Throws when it is set but is not a
 * postgres:// or postgresql:// URL: a mysql:// URL or a bare word must not be tried as Postgres
 * (a bare `decide` became host "base" and failed with ENOTFOUND). The message never repeats the
 * value, which may hold a password.
 */
export function databaseUrl(selection: StoreSelection): string | undefined {
  const url = selection.databaseUrl ?? (selection.env ?? process.env).DECIDE_DATABASE_URL;
  if (url === undefined || url === '') return undefined;
  const problem = databaseUrlProblem(url);
  if (problem) throw new Error(`DECIDE_DATABASE_URL ${problem}; it must be postgres://user:password@host:5432/database (or postgresql://), or unset for the embedded SQLite store`);
  return url;
}

function databaseUrlProblem(url: string): string | undefined {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1];
  if (scheme === undefined) return 'is not a URL (no scheme)';
  if (!/^postgres(ql)?$/i.test(scheme)) return `is a ${scheme.slice(0, 20)}: URL, not a Postgres one`;
  try {
    if (!new URL(url).hostname && !/[?&]host=/.test(url)) return 'names no host';
  } catch {
    return 'is not a valid URL';
  }
  return undefined;
}

export async function openBatchStore(selection: StoreSelection, context: StoreContext): Promise<BatchStore> {
  const url = databaseUrl(selection);
  if (url === undefined) {
    const { dataDir } = context;
    if (dataDir === undefined) throw new Error('the embedded batch store needs a data dir (or DECIDE_DATABASE_URL for Postgres)');
    const { SqliteBatchStore } = await import('./sqlite/sqlite-store.js');
    return SqliteBatchStore.open({ ...context, dataDir });
  }
  let pgStore: typeof import('./pg/pg-store.js');
  try {
    pgStore = await import('./pg/pg-store.js');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new Error(`DECIDE_DATABASE_URL is set, but the Postgres batch store needs the packages pg and pg-boss: npm install pg pg-boss (${(err as Error).message})`);
  }
  const { PgBatchStore } = pgStore;
  return PgBatchStore.open({ ...context, url, env: selection.env ?? process.env });
}

/** The file store beside the batch store (same database, or the same data dir). */
export async function openFileStore(selection: StoreSelection, dataDir: string): Promise<FileStore> {
  const url = databaseUrl(selection);
  if (url === undefined) {
    const { SqliteFileStore } = await import('./sqlite/sqlite-files.js');
    return SqliteFileStore.open(dataDir);
  }
  const { PgFileStore } = await import('./pg/pg-files.js');
  return PgFileStore.open(url);
}
