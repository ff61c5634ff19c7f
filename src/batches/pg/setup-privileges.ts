/**
 * The privileges a process needs to set the batch store up, checked before any of it is applied:
 * a role that lacks one gets a message naming the privilege and the GRANT that gives it, and the
 * database is left as it was, not half set up (our tables created, the queue's schema refused).
 *
 * What first start creates, and the privilege each needs:
 *   - our tables (migrations.ts), in the first schema of the role's search_path: CREATE on that schema;
 *   - the chunk queue's schema (pg-boss, QUEUE_SCHEMA): CREATE on the database.
 * Once both exist, a role with neither privilege starts (it still needs to read and write the tables).
 * Not checked here: a later pg-boss release migrating its schema needs to own it; that failure
 * names the object Postgres refused.
 */
import type { Client } from './database.js';
import { migrationsPending } from './migrations.js';
import { QUEUE_SCHEMA } from './queue.js';

/** Throws, naming each missing privilege, when setting the store up in this database would be refused. */
export async function checkSetupPrivileges(client: Client): Promise<void> {
  const tablesNeeded = await migrationsPending(client);
  const { rows } = await client.query<{ role: string; db: string; schema: string | null; schema_create: boolean | null; db_create: boolean; queue_installed: boolean }>(
    `SELECT current_user AS role, current_database() AS db, current_schema() AS schema,
       CASE WHEN current_schema() IS NULL THEN NULL ELSE has_schema_privilege(current_schema(), 'CREATE') END AS schema_create,
       has_database_privilege(current_database(), 'CREATE') AS db_create,
       to_regclass($1) IS NOT NULL AS queue_installed`,
    [`${QUEUE_SCHEMA}.version`],
  );
  const r = rows[0]!;
  const role = client.escapeIdentifier(r.role);
  const missing: string[] = [];
  if (tablesNeeded && r.schema === null) {
    missing.push(`no schema of the role's search_path exists to create the batch store's tables in (create one, or set the role's search_path)`);
  } else if (tablesNeeded && !r.schema_create) {
    missing.push(`the privilege to create the batch store's tables in schema "${r.schema}" (GRANT CREATE ON SCHEMA ${client.escapeIdentifier(r.schema!)} TO ${role})`);
  }
  if (!r.queue_installed && !r.db_create) {
    missing.push(`the privilege to create the chunk queue's schema ${QUEUE_SCHEMA} in database "${r.db}" (GRANT CREATE ON DATABASE ${client.escapeIdentifier(r.db)} TO ${role})`);
  }
  if (missing.length > 0) {
    throw new Error(`role "${r.role}" lacks ${missing.join(', and ')}; run the GRANT as the database's owner or a superuser. Nothing was set up`);
  }
}
