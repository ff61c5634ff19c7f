/** Which FileStore a process opens: the same choice as the batch store's (store/open-store.ts). */
import { databaseUrl, type StoreSelection } from '../store/open-store.js';
import type { FileStore } from './file-store.js';

export async function openFileStore(selection: StoreSelection, dataDir: string): Promise<FileStore> {
  const url = databaseUrl(selection);
  if (url === undefined) {
    const { SqliteFileStore } = await import('./sqlite-files.js');
    return SqliteFileStore.open(dataDir);
  }
  const { PgFileStore } = await import('./pg-files.js');
  return PgFileStore.open(url);
}
