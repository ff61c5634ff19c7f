/**
 * `decide worker` on a database whose role may not set the batch store up: it exits 1 before
 * applying anything, naming each missing privilege and the GRANT that gives it, once (the
 * database's own message is not repeated either). With the grants it starts, and the store is
 * complete. A real Postgres server and real `decide worker` processes.
 */
import { rm } from 'node:fs/promises';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startWorker, tempWorkspace } from './helpers.js';

let workDir: string;
let modelsDir: string;
let postgres: TestPostgres;

beforeAll(async () => {
  ({ dir: workDir, modelsDir } = await tempWorkspace('pg-privileges'));
  postgres = await startPostgres();
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  await rm(workDir, { recursive: true, force: true });
});

async function sql<T extends pg.QueryResultRow>(url: string, query: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(query)).rows;
  } finally {
    await client.end();
  }
}

/** The worker's exit message, or 'started'. */
async function workerOn(url: string): Promise<string> {
  return startWorker({ modelsDir, env: { DECIDE_DATABASE_URL: url }, args: ['--threads', '1'] }).then(
    async (w) => {
      expect(await w.stop()).toBe(0);
      return 'started';
    },
    (err: Error) => err.message,
  );
}

describe('a role that may not set the batch store up', () => {
  it('is refused before anything is applied, naming the missing privileges; with them granted the worker starts', async () => {
    const adminUrl = await postgres.database('limited_db');
    await sql(postgres.url, 'CREATE ROLE limited LOGIN');
    // As on Postgres 15 and later whatever the server's version: only the owner creates in public.
    await sql(adminUrl, 'REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    const url = adminUrl.replace('postgres://postgres@', 'postgres://limited@');
    const tables = async () => (await sql<{ n: number }>(adminUrl, `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname IN ('public', 'decide_queue')`))[0]!.n;

    const neither = await workerOn(url);
    expect(neither).toMatch(/exited with 1/);
    expect(neither).toContain(`role "limited" lacks the privilege to create the batch store's tables in schema "public" (GRANT CREATE ON SCHEMA "public" TO "limited")`);
    expect(neither).toContain(`the privilege to create the chunk queue's schema decide_queue in database "limited_db" (GRANT CREATE ON DATABASE "limited_db" TO "limited")`);
    expect(neither.match(/lacks/g)).toHaveLength(1);
    expect(await tables()).toBe(0);

    // The schema privilege alone: before, the tables were created and the queue's schema refused.
    await sql(adminUrl, 'GRANT CREATE ON SCHEMA public TO limited');
    const schemaOnly = await workerOn(url);
    expect(schemaOnly).toMatch(/exited with 1/);
    expect(schemaOnly).toMatch(/role "limited" lacks the privilege to create the chunk queue's schema decide_queue in database "limited_db" \(GRANT CREATE ON DATABASE "limited_db" TO "limited"\); run the GRANT as the database's owner or a superuser\. Nothing was set up\n/);
    expect(schemaOnly).not.toContain('batch store\'s tables');
    expect(schemaOnly).not.toMatch(/permission denied/);
    expect(await tables()).toBe(0);

    await sql(postgres.url, 'GRANT CREATE ON DATABASE limited_db TO limited');
    expect(await workerOn(url)).toBe('started');
    expect(await tables()).toBeGreaterThan(0);
  }, 180_000);
});
