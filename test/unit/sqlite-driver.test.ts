/**
 * Which SQLite package opens the batch store on which Node (src/batches/sqlite-driver.ts), decided
 * from the version and what is installed; here (Node 20, where npm leaves better-sqlite3-napi out)
 * only better-sqlite3 12 is. 12 stands in for 13 on Node 22 to 24.18 only: from 24.19 on, 12
 * compiled there aborts the process, so the store refuses to open instead, naming the fix.
 */
import { createRequire } from 'node:module';
import { expect, it } from 'vitest';

import { sqliteDriverPackage, SqliteUnavailableError } from '../../src/batches/sqlite-driver.js';

const require = createRequire(import.meta.url);
const napiInstalled = (() => {
  try {
    require.resolve('better-sqlite3-napi');
    return true;
  } catch {
    return false;
  }
})();

it.skipIf(napiInstalled)('without better-sqlite3-napi: 12 on Node 20 and 22 to 24.18, a refusal naming the fix from 24.19', () => {
  expect(sqliteDriverPackage('20.19.0')).toBe('better-sqlite3');
  expect(sqliteDriverPackage('22.12.0')).toBe('better-sqlite3');
  expect(sqliteDriverPackage('24.18.9')).toBe('better-sqlite3');
  for (const version of ['24.19.0', '24.21.0', '25.0.0', '26.12.1']) {
    expect(() => sqliteDriverPackage(version), version).toThrow(SqliteUnavailableError);
    expect(() => sqliteDriverPackage(version)).toThrow(/better-sqlite3-napi on Node .*without --omit=optional/);
  }
});

it.runIf(napiInstalled)('with better-sqlite3-napi: 13 from Node 22, 12 on Node 20', () => {
  expect(sqliteDriverPackage('20.19.0')).toBe('better-sqlite3');
  for (const version of ['22.12.0', '24.21.0']) expect(sqliteDriverPackage(version)).toBe('better-sqlite3-napi');
});
