/**
 * The command lines of the Postgres batch store refuse to run without a database: `decide worker`
 * has nothing to take chunks from, and `decide serve --no-worker` on the embedded SQLite store
 * would leave its jobs unworked. Both say so and exit 2 before loading anything.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';

async function decide(args: string[]) {
  const env = { ...process.env, DECIDE_DATABASE_URL: '' };
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
  });
});
