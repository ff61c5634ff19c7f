/**
 * The command lines of the Postgres batch store refuse to run without a database: `decide worker`
 * has nothing to take chunks from, and `decide serve --no-worker` on the embedded SQLite store
 * would leave its jobs unworked. Both say so and exit 2 before loading anything. A
 * DECIDE_DATABASE_URL that is not a postgres:// URL is refused the same way, without echoing it.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';

async function decide(args: string[], databaseUrl = '') {
  const env = { ...process.env, DECIDE_DATABASE_URL: databaseUrl };
  return spawnSync(process.execPath, [await decideBin(), ...args], { env, encoding: 'utf8' });
}

describe('decide worker and serve --no-worker without DECIDE_DATABASE_URL', () => {
  it('decide worker exits 2 and names the variable', async () => {
    const r = await decide(['worker', '--threads', '1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('DECIDE_DATABASE_URL is not set');
  });

  it('decide serve --no-worker exits 2 and says why', async () => {
    const r = await decide(['serve', '--no-worker', '--port', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--no-worker needs DECIDE_DATABASE_URL');
  });

  it('decide worker --help lists its options and settings', async () => {
    const r = await decide(['worker', '--help']);
    expect(r.status).toBe(0);
    for (const word of ['--models-dir', '--threads', '--provider', 'DECIDE_DATABASE_URL', 'DECIDE_BATCH_LEASE_SECONDS']) expect(r.stdout).toContain(word);
    // Chunk sizes are the creating API host's setting, not a worker's.
    expect(r.stdout).not.toMatch(/DECIDE_BATCH_CHUNK_RECORDS, DECIDE_BATCH_CHUNK_BYTES +chunk size/);
    expect(r.stdout).toMatch(/Nothing is ever created here/);
  });

  it.each([
    ['worker', 'mysql://root:hunter2@db/decide', /DECIDE_DATABASE_URL is a mysql: URL, not a Postgres one; it must be postgres:\/\//],
    ['worker', 'decide', /DECIDE_DATABASE_URL is not a URL \(no scheme\)/],
    ['serve', 'mysql://root:hunter2@db/decide', /DECIDE_DATABASE_URL is a mysql: URL, not a Postgres one/],
  ])('decide %s with DECIDE_DATABASE_URL=%s exits 2 with a clear message, the value not echoed', async (command, url, message) => {
    const r = await decide([command, '--port', '0'].slice(0, command === 'serve' ? 3 : 1), url);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain('hunter2');
  });
});
