/**
 * Whether this process's database calls are failing, logged once per change of state: one line
 * when calls start failing (with the first error), one when they succeed again. While they fail,
 * callers back off (backoffMs) instead of retrying every poll, so a Postgres outage gives two log
 * lines and a trickle of connection attempts, not ten lines a second.
 */

/** First retry delay after a failure; doubles per failure in a row up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;

export class ConnectionState {
  private failures = 0;

  constructor(private readonly log: (line: string) => void) {}

  get failing(): boolean {
    return this.failures > 0;
  }

  /** Records a failed call; logs only when the calls were succeeding before. */
  failed(err: unknown): void {
    if (this.failures === 0) {
      this.log(
        `batch store: database calls are failing (${String((err as Error)?.message ?? err)}); ` +
          `retrying with a growing pause up to ${MAX_BACKOFF_MS / 1000} s, and saying so when they succeed again`,
      );
    }
    this.failures += 1;
  }

  /** Records a successful call; logs only when calls were failing before. */
  succeeded(): void {
    if (this.failures === 0) return;
    this.log(`batch store: database calls succeed again (after ${this.failures} failed)`);
    this.failures = 0;
  }

  /** How long to wait before the next try: 0 while calls succeed. */
  backoffMs(): number {
    return retryPauseMs(this.failures);
  }
}

/** The pause before the next try after `failures` failures in a row: 0, then doubling up to MAX_BACKOFF_MS. */
export function retryPauseMs(failures: number): number {
  if (failures === 0) return 0;
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(16, failures - 1));
}
