// The scheduler against an engine double: which jobs share an engine call, in which order calls
// run, what a full queue and a failing call do. Fake timers make the coalescing window exact.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { ScoreBatchResult, ScoreGroup } from '../../src/engine/engine.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { EngineError } from '../../src/errors/engine-error.js';

/** A group whose prefix is [id] padded to `tokens` tokens, with one one-token suffix. */
function group(id: number, tokens = 1): ScoreGroup {
  const prefix = new Int32Array(tokens).fill(id);
  return { prefix, suffixes: [{ tokens: Int32Array.of(7), labels: Int32Array.of(1, 2) }] };
}

/**
 * Records every call. A call resolves only when the test releases it (release()), so the test
 * decides what is "running". Each group's score is its id, its cached tokens are id * 10, and a
 * call that holds a group listed in `poisoned` fails as a whole.
 */
class EngineDouble {
  readonly calls: number[][] = [];
  readonly poisoned = new Set<number>();
  private waiting: Array<() => void> = [];

  scoreBatch(groups: ScoreGroup[]): Promise<ScoreBatchResult> {
    const ids = groups.map((g) => g.prefix[0]!);
    this.calls.push(ids);
    return new Promise((resolve, reject) => {
      this.waiting.push(() => {
        if (ids.some((id) => this.poisoned.has(id))) {
          reject(new EngineError('ERR_RUNTIME', `poisoned call ${ids.join(',')}`));
          return;
        }
        resolve({
          groups: ids.map((id) => [{ labelLogits: Float32Array.of(id, -id), logSumExp: id }]),
          cachedTokens: Int32Array.from(ids, (id) => id * 10),
          counters: {} as ScoreBatchResult['counters'],
        });
      });
    });
  }

  get running(): number {
    return this.waiting.length;
  }

  /** Lets the oldest running call finish, then lets the scheduler react. */
  async release(): Promise<void> {
    const next = this.waiting.shift();
    if (!next) throw new Error('no call is running');
    next();
    await flush();
  }
}

/** Runs every pending promise callback (no timers). */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

let engine: EngineDouble;

beforeEach(() => {
  vi.useFakeTimers();
  engine = new EngineDouble();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('coalescing window', () => {
  it('live jobs that arrive within the window share one engine call, each gets its own results', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    const a = scheduler.submit([group(1)]);
    await vi.advanceTimersByTimeAsync(4);
    const b = scheduler.submit([group(2), group(3)]);
    expect(engine.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(engine.calls).toEqual([[1, 2, 3]]);
    await engine.release();
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.groups.map((g) => g[0]!.labelLogits[0])).toEqual([1]);
    expect(ra.cachedTokens).toEqual([10]);
    expect(rb.groups.map((g) => g[0]!.labelLogits[0])).toEqual([2, 3]);
    expect(rb.cachedTokens).toEqual([20, 30]);
    expect(scheduler.getStats()).toMatchObject({ calls: 1, jobs: 2, liveQueued: 0, batchQueued: 0 });
  });

  it('the window is measured from the first job: a later job does not extend it', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    void scheduler.submit([group(1)]);
    await vi.advanceTimersByTimeAsync(3);
    void scheduler.submit([group(2)]);
    await vi.advanceTimersByTimeAsync(2);
    expect(engine.calls).toEqual([[1, 2]]);
  });

  it('a job that reaches maxCallTokens starts the call at once, without waiting for the window', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 1000, maxCallTokens: 10, maxQueuedJobs: 10 });
    // 4 prefix + 1 suffix tokens each: the second job brings the queue to 10.
    void scheduler.submit([group(1, 4)]);
    await flush();
    expect(engine.calls).toEqual([]);
    void scheduler.submit([group(2, 4)]);
    await flush();
    expect(engine.calls).toEqual([[1, 2]]);
  });

  it('a call takes live jobs only up to maxCallTokens; the rest form the next call, with no second window', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    const jobs = [scheduler.submit([group(1, 3)]), scheduler.submit([group(2, 3)])];
    await vi.advanceTimersByTimeAsync(5);
    expect(engine.calls).toEqual([[1, 2]]);
    // Arrive while the call runs: 5 + 5 + 5 tokens > 10, so they split into two calls.
    jobs.push(scheduler.submit([group(3, 4)]), scheduler.submit([group(4, 4)]), scheduler.submit([group(5, 4)]));
    await flush();
    expect(engine.calls).toHaveLength(1);
    await engine.release();
    expect(engine.calls).toEqual([[1, 2], [3, 4]]);
    await engine.release();
    expect(engine.calls).toEqual([[1, 2], [3, 4], [5]]);
    await engine.release();
    const results = await Promise.all(jobs);
    expect(results.map((r) => r.groups[0]![0]!.labelLogits[0])).toEqual([1, 2, 3, 4, 5]);
  });

  it('one job larger than maxCallTokens still runs, alone', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    const big = scheduler.submit([group(9, 50)]);
    await flush();
    expect(engine.calls).toEqual([[9]]);
    await engine.release();
    expect((await big).groups).toHaveLength(1);
  });
});

describe('priority', () => {
  it('batch work starts at once when nothing live waits, one batch job per call', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    const b1 = scheduler.submit([group(11)], 'batch');
    const b2 = scheduler.submit([group(12)], 'batch');
    await flush();
    expect(engine.calls).toEqual([[11]]);
    await engine.release();
    expect(engine.calls).toEqual([[11], [12]]);
    await engine.release();
    await expect(b1).resolves.toMatchObject({ cachedTokens: [110] });
    await expect(b2).resolves.toMatchObject({ cachedTokens: [120] });
  });

  it('a live job queued behind running batch work goes before every queued batch job', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    void scheduler.submit([group(11)], 'batch');
    void scheduler.submit([group(12)], 'batch');
    void scheduler.submit([group(13)], 'batch');
    await flush();
    expect(engine.calls).toEqual([[11]]);
    const live = scheduler.submit([group(1)]);
    const live2 = scheduler.submit([group(2)]);
    expect(scheduler.getStats()).toMatchObject({ liveQueued: 2, batchQueued: 2 });
    await engine.release();
    // The live jobs waited one engine call, then ran together ahead of batch jobs 12 and 13.
    expect(engine.calls).toEqual([[11], [1, 2]]);
    await engine.release();
    await Promise.all([live, live2]);
    expect(engine.calls).toEqual([[11], [1, 2], [12]]);
    await engine.release();
    await engine.release();
    expect(engine.calls).toEqual([[11], [1, 2], [12], [13]]);
  });

  it('one call runs at a time', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 1, maxCallTokens: 1, maxQueuedJobs: 10 });
    for (let i = 1; i <= 4; i++) void scheduler.submit([group(i)], i % 2 ? 'live' : 'batch');
    await vi.advanceTimersByTimeAsync(10);
    for (let i = 0; i < 4; i++) {
      expect(engine.running).toBe(1);
      await engine.release();
    }
    expect(engine.running).toBe(0);
    expect(engine.calls.flat().sort()).toEqual([1, 2, 3, 4]);
  });
});

describe('batch jobs in short engine calls', () => {
  it('a batch job runs in calls of at most maxBatchCallTokens, in order; it resolves once, with every group', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 10 });
    // Each group is 4 tokens (3 prefix + 1 suffix): two fit in 10.
    const job = scheduler.submit([11, 12, 13, 14, 15].map((id) => group(id, 3)), 'batch');
    let settled = false;
    void job.then(() => (settled = true));
    await flush();
    for (let i = 0; i < 2; i++) {
      await engine.release();
      expect(settled).toBe(false);
    }
    await engine.release();
    expect(engine.calls).toEqual([[11, 12], [13, 14], [15]]);
    const result = await job;
    expect(result.cachedTokens).toEqual([110, 120, 130, 140, 150]);
    expect(result.groups.map((g) => g[0]!.logSumExp)).toEqual([11, 12, 13, 14, 15]);
    expect(scheduler.getStats()).toMatchObject({ calls: 3, jobs: 1, batchQueued: 0 });
    for (const call of engine.calls) expect(call.length * 4).toBeLessThanOrEqual(10);
  });

  it('a group larger than maxBatchCallTokens runs alone', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 10 });
    const job = scheduler.submit([group(11, 3), group(12, 30), group(13, 3)], 'batch');
    await flush();
    for (let i = 0; i < 3; i++) await engine.release();
    expect(engine.calls).toEqual([[11], [12], [13]]);
    await expect(job).resolves.toMatchObject({ cachedTokens: [110, 120, 130] });
  });

  it("a live job queued while a batch job runs is served before the batch job's next call", async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 8 });
    const batch = scheduler.submit([11, 12, 13, 14, 15, 16].map((id) => group(id, 3)), 'batch');
    await flush();
    expect(engine.calls).toEqual([[11, 12]]);
    const live = scheduler.submit([group(1)]);
    await engine.release();
    // The live job waited for one short call, not for the rest of the batch job.
    expect(engine.calls).toEqual([[11, 12], [1]]);
    await engine.release();
    await expect(live).resolves.toMatchObject({ cachedTokens: [10] });
    await engine.release();
    await engine.release();
    expect(engine.calls).toEqual([[11, 12], [1], [13, 14], [15, 16]]);
    await expect(batch).resolves.toMatchObject({ cachedTokens: [110, 120, 130, 140, 150, 160] });
  });

  it('a failing call fails its batch job (no later slice runs) and the next batch job goes on', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 8 });
    engine.poisoned.add(13);
    const bad = scheduler.submit([11, 12, 13, 14, 15].map((id) => group(id, 3)), 'batch');
    const next = scheduler.submit([group(21, 3)], 'batch');
    await flush();
    await engine.release();
    await engine.release();
    await expect(bad).rejects.toMatchObject({ code: 'ERR_RUNTIME', message: 'poisoned call 13,14' });
    await engine.release();
    await expect(next).resolves.toMatchObject({ cachedTokens: [210] });
    expect(engine.calls).toEqual([[11, 12], [13, 14], [21]]);
  });
});

describe('bounded queue', () => {
  it('past maxQueuedJobs live jobs, submit() rejects with ERR_QUEUE_FULL; batch jobs are not bounded', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 2 });
    const accepted = [scheduler.submit([group(1)]), scheduler.submit([group(2)])];
    const refused = scheduler.submit([group(3)]);
    await expect(refused).rejects.toBeInstanceOf(EngineError);
    await expect(refused).rejects.toMatchObject({ code: 'ERR_QUEUE_FULL' });
    const batch = scheduler.submit([group(4)], 'batch');
    expect(scheduler.getStats()).toMatchObject({ liveQueued: 2, batchQueued: 1 });
    // Once the queue drains, live jobs are accepted again.
    await vi.advanceTimersByTimeAsync(5);
    const again = scheduler.submit([group(5)]);
    await engine.release();
    await engine.release();
    await engine.release();
    await Promise.all([...accepted, batch, again]);
    expect(engine.calls).toEqual([[1, 2], [5], [4]]);
  });
});

describe('retries', () => {
  it('a failed shared call is retried job by job: only the bad job fails, with the engine error', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    engine.poisoned.add(2);
    const good1 = scheduler.submit([group(1)]);
    const bad = scheduler.submit([group(2), group(3)]);
    const good2 = scheduler.submit([group(4)]);
    await vi.advanceTimersByTimeAsync(5);
    await engine.release(); // the shared call [1, 2, 3, 4] fails
    await engine.release(); // [1]
    await engine.release(); // [2, 3] fails: that job's error
    await engine.release(); // [4]
    expect(engine.calls).toEqual([[1, 2, 3, 4], [1], [2, 3], [4]]);
    await expect(good1).resolves.toMatchObject({ cachedTokens: [10] });
    await expect(good2).resolves.toMatchObject({ cachedTokens: [40] });
    await expect(bad).rejects.toMatchObject({ code: 'ERR_RUNTIME', message: 'poisoned call 2,3' });
    expect(scheduler.getStats().calls).toBe(4);
  });

  it('a failing job alone is not retried, and the scheduler goes on with the next call', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    engine.poisoned.add(1);
    const bad = scheduler.submit([group(1)], 'batch');
    const next = scheduler.submit([group(2)], 'batch');
    await flush();
    await engine.release();
    await expect(bad).rejects.toMatchObject({ code: 'ERR_RUNTIME' });
    await engine.release();
    await expect(next).resolves.toMatchObject({ cachedTokens: [20] });
    expect(engine.calls).toEqual([[1], [2]]);
  });
});

describe('whenIdle', () => {
  it('resolves only once nothing is queued or running', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    await scheduler.whenIdle();
    void scheduler.submit([group(1)]);
    void scheduler.submit([group(2)], 'batch');
    let idle = false;
    void scheduler.whenIdle().then(() => (idle = true));
    await vi.advanceTimersByTimeAsync(5);
    await engine.release();
    expect(idle).toBe(false);
    await engine.release();
    expect(idle).toBe(true);
  });
});
