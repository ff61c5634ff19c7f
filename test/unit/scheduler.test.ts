// The scheduler against an engine double: which jobs share an engine call, in which order calls
// run, how a group larger than a call is cut between its questions, what a full queue, an aborted
// job and a failing call do. Fake timers make the coalescing window exact.
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
 * A group of `count` questions of `suffixTokens` tokens each (question k's tokens are all k) after
 * a prefix of `prefixTokens` tokens [id, ...].
 */
function wideGroup(id: number, prefixTokens: number, count: number, suffixTokens: number): ScoreGroup {
  const prefix = new Int32Array(prefixTokens).fill(id);
  const suffixes = Array.from({ length: count }, (_, k) => ({ tokens: new Int32Array(suffixTokens).fill(k), labels: Int32Array.of(1, 2) }));
  return { prefix, suffixes };
}

/**
 * Records every call. A call resolves only when the test releases it (release()), so the test
 * decides what is "running". Each suffix's score is [group id, -id, its first token], its group's
 * cached tokens are id * 10 (with `prefixCache`: 0 the first time a prefix is seen, its length
 * after, as the engine's prefix cache reports), and a call that holds a group listed in
 * `poisoned` fails as a whole. `pieces` records each call as "id:first..last question".
 */
class EngineDouble {
  readonly calls: number[][] = [];
  readonly pieces: string[][] = [];
  readonly poisoned = new Set<number>();
  prefixCache = false;
  private seen = new Set<number>();
  private waiting: Array<() => void> = [];

  scoreBatch(groups: ScoreGroup[]): Promise<ScoreBatchResult> {
    const ids = groups.map((g) => g.prefix[0]!);
    this.calls.push(ids);
    this.pieces.push(groups.map((g) => `${g.prefix[0]}:${g.suffixes[0]!.tokens[0]}..${g.suffixes.at(-1)!.tokens[0]}`));
    const cached = groups.map((g) => (this.prefixCache ? (this.seen.has(g.prefix[0]!) ? g.prefix.length : 0) : g.prefix[0]! * 10));
    for (const g of groups) this.seen.add(g.prefix[0]!);
    return new Promise((resolve, reject) => {
      this.waiting.push(() => {
        if (ids.some((id) => this.poisoned.has(id))) {
          reject(new EngineError('ERR_RUNTIME', `poisoned call ${ids.join(',')}`));
          return;
        }
        resolve({
          groups: groups.map((g, i) => g.suffixes.map((s) => ({ labelLogits: Float32Array.of(ids[i]!, -ids[i]!, s.tokens[0]!), logSumExp: ids[i]! }))),
          cachedTokens: Int32Array.from(cached),
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

describe('a group larger than a call is cut between its questions', () => {
  it('live: another live job goes into the next call, before the rest of the large one; answers come back whole and in order', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    // 4 prefix + 6 questions of 3 tokens: [prefix, q0, q1] = 10, [q2, q3, q4] = 9, [q5] = 3.
    const big = scheduler.submit([wideGroup(9, 4, 6, 3)]);
    await flush();
    expect(engine.pieces).toEqual([['9:0..1']]);
    const small = scheduler.submit([group(1, 2)]);
    await engine.release();
    // The small job's only piece goes first; the big job's next piece fills the call only if it fits.
    expect(engine.pieces).toEqual([['9:0..1'], ['1:7..7']]);
    await engine.release();
    await expect(small).resolves.toMatchObject({ cachedTokens: [10] });
    expect(engine.pieces).toEqual([['9:0..1'], ['1:7..7'], ['9:2..4']]);
    await engine.release();
    await engine.release();
    expect(engine.pieces).toEqual([['9:0..1'], ['1:7..7'], ['9:2..4'], ['9:5..5']]);
    const result = await big;
    expect(result.groups).toHaveLength(1);
    expect(result.groups[0]!.map((score) => score.labelLogits[2])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(scheduler.getStats()).toMatchObject({ calls: 4, jobs: 2, liveQueued: 0 });
  });

  it("a cut group's cached tokens are what its first piece found, not the cache its own first piece filled", async () => {
    engine.prefixCache = true;
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    const big = scheduler.submit([wideGroup(9, 4, 6, 3)]);
    await flush();
    for (let i = 0; i < 3; i++) await engine.release();
    expect(engine.calls).toHaveLength(3);
    await expect(big).resolves.toMatchObject({ cachedTokens: [0] });
    const again = scheduler.submit([wideGroup(9, 4, 6, 3)]);
    await flush();
    for (let i = 0; i < 3; i++) await engine.release();
    await expect(again).resolves.toMatchObject({ cachedTokens: [4] });
  });

  it('batch: pieces of at most maxBatchCallTokens; a live job goes between them', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 8 });
    // 2 prefix + 5 questions of 2 tokens: [prefix, q0, q1, q2] = 8, [q3, q4] = 4; then group 12 (4) joins that call.
    const batch = scheduler.submit([wideGroup(11, 2, 5, 2), group(12, 3)], 'batch');
    await flush();
    expect(engine.pieces).toEqual([['11:0..2']]);
    const live = scheduler.submit([group(1)]);
    await engine.release();
    expect(engine.pieces).toEqual([['11:0..2'], ['1:7..7']]);
    await engine.release();
    await live;
    expect(engine.pieces).toEqual([['11:0..2'], ['1:7..7'], ['11:3..4', '12:7..7']]);
    await engine.release();
    const result = await batch;
    expect(result.groups[0]!.map((score) => score.labelLogits[2])).toEqual([0, 1, 2, 3, 4]);
    expect(result.groups[1]!.map((score) => score.labelLogits[0])).toEqual([12]);
    expect(result.cachedTokens).toEqual([110, 120]);
  });

  it('a single question longer than the budget is one call alone', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    const job = scheduler.submit([wideGroup(9, 2, 3, 12)]);
    await flush();
    for (let i = 0; i < 3; i++) await engine.release();
    expect(engine.pieces).toEqual([['9:0..0'], ['9:1..1'], ['9:2..2']]);
    expect((await job).groups[0]).toHaveLength(3);
  });
});

describe('abort', () => {
  it('a job aborted while it waits never runs and rejects with the reason; its companions run', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    const controller = new AbortController();
    const dropped = scheduler.submit([group(1)], 'live', controller.signal);
    const kept = scheduler.submit([group(2)]);
    controller.abort(new Error('client went away'));
    await expect(dropped).rejects.toThrow('client went away');
    await vi.advanceTimersByTimeAsync(5);
    expect(engine.calls).toEqual([[2]]);
    await engine.release();
    await expect(kept).resolves.toMatchObject({ cachedTokens: [20] });
    expect(scheduler.getStats()).toMatchObject({ liveQueued: 0, jobs: 1 });
  });

  it('a large job aborted mid-way: its running piece finishes, the pieces left never run', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10 });
    const controller = new AbortController();
    const big = scheduler.submit([wideGroup(9, 4, 6, 3)], 'live', controller.signal);
    await flush();
    expect(engine.pieces).toEqual([['9:0..1']]);
    controller.abort();
    await expect(big).rejects.toMatchObject({ name: 'AbortError' });
    await engine.release();
    expect(engine.calls).toHaveLength(1);
    await scheduler.whenIdle();
    // The queue took nothing of it with it: a later job runs alone and at once once its window ends.
    const next = scheduler.submit([group(1)]);
    await vi.advanceTimersByTimeAsync(5);
    expect(engine.calls).toEqual([[9], [1]]);
    await engine.release();
    await next;
  });

  it('a batch job aborted between its calls stops there', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxBatchCallTokens: 8 });
    const controller = new AbortController();
    const batch = scheduler.submit([11, 12, 13, 14].map((id) => group(id, 3)), 'batch', controller.signal);
    await flush();
    controller.abort();
    await engine.release();
    await expect(batch).rejects.toMatchObject({ name: 'AbortError' });
    expect(engine.calls).toEqual([[11, 12]]);
    expect(scheduler.getStats().batchQueued).toBe(0);
  });

  it('a signal aborted before submit rejects at once', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10 });
    await expect(scheduler.submit([group(1)], 'live', AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    await vi.advanceTimersByTimeAsync(5);
    expect(engine.calls).toEqual([]);
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

describe('queue wait', () => {
  it('a live job that waits maxQueueWaitMs without starting is refused with ERR_QUEUE_FULL; one that started is not', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10, maxQueueWaitMs: 1000 });
    const running = scheduler.submit([wideGroup(9, 4, 6, 3)]); // three calls, started at once
    await flush();
    // Its rejection is caught as it happens (while the timers advance), not left unhandled until then.
    const waiting = scheduler.submit([group(1, 9)]).then(
      () => 'resolved',
      (err: unknown) => err,
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(scheduler.getStats().liveQueued).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(await waiting).toMatchObject({ code: 'ERR_QUEUE_FULL' });
    expect(scheduler.getStats().liveQueued).toBe(1);
    // The large job started before its deadline: it runs to the end however long that takes.
    await vi.advanceTimersByTimeAsync(5000);
    for (let i = 0; i < 3; i++) await engine.release();
    expect(engine.pieces.flat()).toEqual(['9:0..1', '9:2..4', '9:5..5']);
    await expect(running).resolves.toMatchObject({ cachedTokens: [90] });
  });

  it('the wait counts from `since` (the arrival of the request): time spent before submit counts, and withinQueueWait bounds it', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 10, maxQueuedJobs: 10, maxQueueWaitMs: 1000 });
    const running = scheduler.submit([wideGroup(9, 4, 6, 3)]);
    await flush();
    const since = performance.now();
    await vi.advanceTimersByTimeAsync(600); // tokenizing, say
    const waiting = scheduler.submit([group(1, 9)], 'live', undefined, since).then(
      () => 'resolved',
      (err: unknown) => err,
    );
    await vi.advanceTimersByTimeAsync(399);
    expect(scheduler.getStats().liveQueued).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(await waiting).toMatchObject({ code: 'ERR_QUEUE_FULL', message: expect.stringContaining('waited 1 s without starting') });
    // Work before submit that outlasts the limit is refused at the limit, whatever it does after.
    const slow = scheduler.withinQueueWait(new Promise(() => undefined), performance.now()).catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await slow).toMatchObject({ code: 'ERR_QUEUE_FULL' });
    await expect(scheduler.withinQueueWait(Promise.resolve('tokens'), performance.now())).resolves.toBe('tokens');
    for (let i = 0; i < 3; i++) await engine.release();
    await running;
  });

  it('batch jobs have no deadline', async () => {
    const scheduler = new Scheduler(engine, { windowMs: 5, maxCallTokens: 1000, maxQueuedJobs: 10, maxQueueWaitMs: 1000 });
    void scheduler.submit([group(11)], 'batch');
    await flush();
    const queued = scheduler.submit([group(12)], 'batch');
    await vi.advanceTimersByTimeAsync(5000);
    await engine.release();
    await engine.release();
    await expect(queued).resolves.toMatchObject({ cachedTokens: [120] });
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
