import type { Batch } from '../types.js';

/** completed (and failed, in its own colour) out of total. */
export function BatchProgress({ batch }: { batch: Batch }) {
  const { total, completed, failed } = batch.progress;
  const share = (n: number) => (total > 0 ? `${(100 * n) / total}%` : '0%');
  const done = total > 0 ? Math.round((100 * (completed + failed)) / total) : 0;
  return (
    <div class="progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={done} aria-label={`${batch.id} progress`}>
      <div class="progress-track">
        <span class="progress-ok" style={{ width: share(completed) }} />
        <span class="progress-failed" style={{ width: share(failed) }} />
      </div>
      <span class="progress-text" data-percent={done}>
        {done}% · {completed} done{failed ? `, ${failed} failed` : ''} of {total}
      </span>
    </div>
  );
}
