/**
 * Which BatchStore a process opens: Postgres when a database URL is given (the option, else
 * DECIDE_DATABASE_URL), else the embedded SQLite store under the data dir. The Postgres code (and
 * the pg and pg-boss packages) is loaded only when used.
 */
import type { BatchDecisionService } from '../job-pump.js';
import type { BatchSettings } from '../settings.js';
import type { BatchStore } from './batch-store.js';

export interface StoreSelection {
  /** postgres://... ; default DECIDE_DATABASE_URL; neither: SQLite under the data dir. */
  databaseUrl?: string;
  /** Environment read for DECIDE_DATABASE_URL and DECIDE_BATCH_LEASE_SECONDS; default process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface StoreContext {
  dataDir: string;
  settings: BatchSettings;
  service: BatchDecisionService;
  /** Work on jobs in this process. */
  work: boolean;
  log: (line: string) => void;
}

/** The database URL in force, or undefined for SQLite. */
export function databaseUrl(selection: StoreSelection): string | undefined {
  const url = selection.databaseUrl ?? (selection.env ?? process.env).DECIDE_DATABASE_URL;
  return url === undefined || url === '' ? undefined : url;
}

export async function openBatchStore(selection: StoreSelection, context: StoreContext): Promise<BatchStore> {
  const url = databaseUrl(selection);
  if (url === undefined) {
    const { SqliteBatchStore } = await import('./sqlite-store.js');
    return SqliteBatchStore.open(context);
  }
  const { PgBatchStore } = await import('./pg-store.js');
  return PgBatchStore.open({ ...context, url, env: selection.env ?? process.env });
}
