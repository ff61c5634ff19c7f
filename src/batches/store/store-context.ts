/** What every batch store is opened with (open-store.ts picks the store; each store takes this). */
import type { BatchDecisionService } from '../job-pump.js';
import type { BatchSettings } from '../settings.js';

export interface StoreContext {
  dataDir: string;
  settings: BatchSettings;
  service: BatchDecisionService;
  /** Work on jobs in this process. */
  work: boolean;
  log: (line: string) => void;
}
