/**
 * Scheduler: coalesces concurrent work for one engine into shared engine calls, and keeps any one
 * job from holding the engine for long.
 *
 * - A job is cut into pieces at submit: a group whole, or, where a group is larger than a call's
 *   budget, runs of its suffixes (questions), the first with the prefix and the later ones counting
 *   their suffixes only (their prefix is found in the prefix cache by then; without one it is
 *   computed again, same KV, same scores). A piece larger than the budget alone is one suffix.
 * - Live (/v1/decide) jobs wait at most `windowMs` for companions, or less when the queued tokens
 *   reach `maxCallTokens`; jobs that arrive while a call runs form the next call, which starts as
 *   soon as the current one ends. One call is in flight per engine. A call takes the next piece of
 *   every queued live job, those not yet started first, then fills up to `maxCallTokens`. So a
 *   live job waits about one call of at most `maxCallTokens` behind another, however large that
 *   one is (a single question longer than that is one call alone).
 * - Batch jobs run only when no live job is queued, one batch job at a time, in engine calls of at
 *   most `maxBatchCallTokens` tokens. Between two calls of a batch job, queued live jobs go first:
 *   a live request waits at most one short engine call behind batch work.
 * - The live queue is bounded: past `maxQueuedJobs`, submit() rejects with ERR_QUEUE_FULL; so
 *   does a live job that waited `maxQueueWaitMs` without starting (the server is busy: a client
 *   gets a 429 to retry on, not an answer after its own timeout). The wait counts from when the
 *   caller says it began (`since`: the request's arrival, before its tokenization, which
 *   withinQueueWait() bounds by the same limit), else from submit.
 * - A job whose signal aborts is dropped: its pieces not yet scored never run, and submit()
 *   rejects with the signal's reason (a call already running finishes; its scores are discarded).
 * - A failed shared call is retried job by job, so one bad job cannot fail its companions.
 * Coalescing and cutting never change results: a row's scores do not depend on what else is in its
 * batch or whether its prefix came from the cache (tested in test/native/engine.test.ts).
 */
import { checkOptionNames } from '../support/option-checks.js';
import { EngineError } from '../errors/engine-error.js';
import type { Engine, ScoreGroup, SuffixScore } from '../engine/engine.js';

/** Live calls go before batch work. */
export const PRIORITIES = ['live', 'batch'] as const;
export type Priority = (typeof PRIORITIES)[number];

export interface SchedulerOptions {
  /** How long the first live job of a call waits for companions. */
  windowMs: number;
  /** Tokens (prefix + suffixes) that start a call at once. */
  maxCallTokens: number;
  /** Live jobs that may wait; more are refused with ERR_QUEUE_FULL. */
  maxQueuedJobs: number;
  /**
   * Tokens per engine call of batch work: what a live request may have to wait behind. Smaller
   * calls let live work in sooner and cost batch throughput (bench/live-during-batch.ts).
   */
  maxBatchCallTokens: number;
  /**
   * How long a live job may wait before its first engine call; then it is refused with
   * ERR_QUEUE_FULL. Below the 10 s after which TypeSafe's SDK gives up on an attempt and sends it
   * again. Infinity waits as long as it takes.
   */
  maxQueueWaitMs: number;
}

export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = { windowMs: 3, maxCallTokens: 16384, maxQueuedJobs: 512, maxBatchCallTokens: 2048, maxQueueWaitMs: 8000 };

/** What each option must be; a value outside it would refuse every request (a queue of 0) or none. */
const SCHEDULER_RULES: Record<keyof SchedulerOptions, [rule: string, ok: (v: number) => boolean]> = {
  windowMs: ['a number of milliseconds of at least 0', (v) => Number.isFinite(v) && v >= 0],
  maxCallTokens: ['a whole number of tokens of at least 1', (v) => Number.isInteger(v) && v >= 1],
  maxQueuedJobs: ['a whole number of jobs of at least 1', (v) => Number.isInteger(v) && v >= 1],
  maxBatchCallTokens: ['a whole number of tokens of at least 1', (v) => Number.isInteger(v) && v >= 1],
  maxQueueWaitMs: ['a number of milliseconds above 0 (Infinity: no limit)', (v) => v > 0],
};

/** Refuses unknown or out-of-range scheduler options (ERR_INPUT naming `<where>.<option>`). */
export function checkSchedulerOptions(options: Partial<SchedulerOptions>, where = 'scheduler'): void {
  checkOptionNames(options, Object.keys(SCHEDULER_RULES), where);
  for (const [name, [rule, ok]] of Object.entries(SCHEDULER_RULES)) {
    const value: unknown = options[name as keyof SchedulerOptions];
    if (value !== undefined && !(typeof value === 'number' && ok(value))) {
      throw new EngineError('ERR_INPUT', `${where}.${name} must be ${rule}, got ${String(value)}`);
    }
  }
}

export interface JobResult {
  groups: SuffixScore[][];
  /** Per group: prefix tokens served from the prefix cache (as its first piece found them). */
  cachedTokens: number[];
}

/** Suffixes [from, to) of one of a job's groups, scored in one engine call. */
interface Piece {
  group: number;
  from: number;
  to: number;
  /** What it adds to a call: the prefix (first piece of a group only) and its suffixes. */
  tokens: number;
}

interface Job {
  groups: ScoreGroup[];
  pieces: Piece[];
  /** The next piece to take. */
  next: number;
  /** Pieces not yet scored; the job is settled when none are left. */
  pending: number;
  /** Tokens of the pieces not yet taken (counted in the live queue's total). */
  tokensLeft: number;
  resolve(result: JobResult): void;
  reject(err: unknown): void;
  settled: boolean;
  /** Per group its suffixes' scores, filled piece by piece. */
  scores: SuffixScore[][];
  cachedTokens: number[];
  /** Detaches the abort listener. */
  release(): void;
}

/** A piece of a job that goes into one engine call. */
interface Part {
  job: Job;
  piece: Piece;
}

export interface SchedulerStats {
  calls: number;
  jobs: number;
  liveQueued: number;
  batchQueued: number;
}

/** A job's groups as pieces of at most `budget` tokens where a group can be cut (see the header). */
function cutPieces(groups: ScoreGroup[], budget: number): Piece[] {
  const pieces: Piece[] = [];
  groups.forEach((g, group) => {
    const n = g.suffixes.length;
    let from = 0;
    let tokens = g.prefix.length;
    for (let i = 0; i < n; i++) {
      const t = g.suffixes[i]!.tokens.length;
      if (i > from && tokens + t > budget) {
        pieces.push({ group, from, to: i, tokens });
        from = i;
        tokens = 0;
      }
      tokens += t;
    }
    pieces.push({ group, from, to: n, tokens });
  });
  return pieces;
}

function engineGroup(job: Job, piece: Piece): ScoreGroup {
  const g = job.groups[piece.group]!;
  return piece.from === 0 && piece.to === g.suffixes.length ? g : { ...g, suffixes: g.suffixes.slice(piece.from, piece.to) };
}

export class Scheduler {
  private readonly options: SchedulerOptions;
  private live: Job[] = [];
  private batch: Job[] = [];
  private liveTokens = 0;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private idleWaiters: Array<() => void> = [];
  private stats = { calls: 0, jobs: 0 };

  constructor(
    private readonly engine: Pick<Engine, 'scoreBatch'>,
    options: Partial<SchedulerOptions> = {},
  ) {
    checkSchedulerOptions(options);
    this.options = { ...DEFAULT_SCHEDULER_OPTIONS, ...options };
  }

  /**
   * Queues groups for scoring; resolves with their scores in order. An aborted `signal` drops the
   * job (what is not yet scored never runs) and rejects with the signal's reason.
   */
  submit(groups: ScoreGroup[], priority: Priority = 'live', signal?: AbortSignal, since = performance.now()): Promise<JobResult> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (priority === 'live' && this.live.length >= this.options.maxQueuedJobs) {
      return Promise.reject(new EngineError('ERR_QUEUE_FULL', 'the engine queue is full; retry shortly'));
    }
    return new Promise<JobResult>((resolve, reject) => {
      const pieces = cutPieces(groups, priority === 'live' ? this.options.maxCallTokens : this.options.maxBatchCallTokens);
      const job: Job = {
        groups,
        pieces,
        next: 0,
        pending: pieces.length,
        tokensLeft: pieces.reduce((n, p) => n + p.tokens, 0),
        resolve,
        reject,
        settled: false,
        scores: groups.map((g) => new Array<SuffixScore>(g.suffixes.length)),
        cachedTokens: groups.map(() => 0),
        release: () => undefined,
      };
      if (signal) {
        const onAbort = () => this.finish(job, signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        job.release = () => signal.removeEventListener('abort', onAbort);
      }
      if (pieces.length === 0) {
        this.finish(job, null);
        return;
      }
      if (priority === 'live') {
        this.live.push(job);
        this.liveTokens += job.tokensLeft;
        this.startDeadline(job, since);
      } else {
        this.batch.push(job);
      }
      this.kick(priority);
    });
  }

  getStats(): SchedulerStats {
    return { ...this.stats, liveQueued: this.live.length, batchQueued: this.batch.filter((j) => j.next === 0).length };
  }

  /** Resolves once nothing is queued or running. */
  whenIdle(): Promise<void> {
    if (!this.running && this.live.length === 0 && this.batch.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private kick(reason: Priority): void {
    if (this.running) return;
    if (reason === 'batch' && this.live.length === 0) {
      void this.runCall();
      return;
    }
    if (this.liveTokens >= this.options.maxCallTokens) {
      void this.runCall();
      return;
    }
    this.timer ??= setTimeout(() => void this.runCall(), this.options.windowMs);
  }

  /**
   * Runs `work` (what a live job does before it is submitted: tokenizing its request) under the
   * queue's wait limit counted from `since` (performance.now() at the request's arrival): past it,
   * rejects with the same ERR_QUEUE_FULL as a job that waited in the queue, and the job is never
   * submitted. The tokenizer's queue is shared with batch records, and a client's timeout counts
   * that wait too.
   */
  withinQueueWait<T>(work: Promise<T>, since: number): Promise<T> {
    const waitMs = this.options.maxQueueWaitMs;
    if (!Number.isFinite(waitMs)) return work;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.waitedTooLong()), Math.max(0, since + waitMs - performance.now()));
      timer.unref();
    });
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  }

  private waitedTooLong(): EngineError {
    return new EngineError('ERR_QUEUE_FULL', `the engine is busy: this request waited ${this.options.maxQueueWaitMs / 1000} s without starting; retry shortly`);
  }

  /** Refuses `job` with ERR_QUEUE_FULL if it has not started within maxQueueWaitMs of `since`. */
  private startDeadline(job: Job, since: number): void {
    const waitMs = this.options.maxQueueWaitMs;
    if (!Number.isFinite(waitMs)) return;
    const timer = setTimeout(() => {
      if (job.next > 0) return;
      this.finish(job, this.waitedTooLong());
    }, Math.max(0, since + waitMs - performance.now()));
    timer.unref();
    const release = job.release;
    job.release = () => {
      clearTimeout(timer);
      release();
    };
  }

  /** Takes the next piece of `job` into `parts`. */
  private take(job: Job, parts: Part[]): number {
    const piece = job.pieces[job.next]!;
    if (job.next === 0) this.stats.jobs += 1;
    job.next += 1;
    job.tokensLeft -= piece.tokens;
    parts.push({ job, piece });
    return piece.tokens;
  }

  /** The next engine call: pieces of the queued live jobs, else the next slice of the oldest batch job. */
  private takeParts(): Part[] {
    const parts: Part[] = [];
    if (this.live.length > 0) {
      const budget = this.options.maxCallTokens;
      let tokens = 0;
      // Jobs not yet started first (in arrival order), then the rest of larger ones: a request
      // that arrives behind a large one waits one call, not for all of it.
      const order = [...this.live.filter((job) => job.next === 0), ...this.live.filter((job) => job.next > 0)];
      // Every job's next piece first, then more pieces job by job.
      for (const job of order) {
        if (parts.length > 0 && tokens + job.pieces[job.next]!.tokens > budget) continue;
        tokens += this.take(job, parts);
      }
      fill: for (const job of order) {
        while (job.next < job.pieces.length) {
          if (tokens + job.pieces[job.next]!.tokens > budget) break fill;
          tokens += this.take(job, parts);
        }
      }
      this.liveTokens -= tokens;
      this.live = order.filter((job) => job.next < job.pieces.length);
      // Each job's pieces side by side.
      const taken = new Set(parts.map((p) => p.job));
      return [...taken].flatMap((job) => parts.filter((p) => p.job === job));
    }
    const job = this.batch[0];
    if (!job) return parts;
    // The job stays queued until its last piece is taken.
    let tokens = 0;
    while (job.next < job.pieces.length) {
      if (parts.length > 0 && tokens + job.pieces[job.next]!.tokens > this.options.maxBatchCallTokens) break;
      tokens += this.take(job, parts);
    }
    if (job.next === job.pieces.length) this.batch.shift();
    return parts;
  }

  private async runCall(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.running) return;
    const parts = this.takeParts();
    if (parts.length === 0) {
      this.notifyIdle();
      return;
    }
    this.running = true;
    try {
      await this.score(parts);
    } finally {
      this.running = false;
    }
    if (this.live.length > 0 || this.batch.length > 0) {
      // Work that queued during the call has waited long enough: no second window.
      void this.runCall();
    } else {
      this.notifyIdle();
    }
  }

  private async score(parts: Part[]): Promise<void> {
    // A job dropped (aborted or failed) since its pieces were taken is not computed.
    parts = parts.filter((p) => !p.job.settled);
    if (parts.length === 0) return;
    this.stats.calls += 1;
    try {
      const result = await this.engine.scoreBatch(parts.map((p) => engineGroup(p.job, p.piece)));
      parts.forEach(({ job, piece }, i) => {
        if (job.settled) return;
        const scores = job.scores[piece.group]!;
        result.groups[i]!.forEach((score, k) => (scores[piece.from + k] = score));
        if (piece.from === 0) job.cachedTokens[piece.group] = result.cachedTokens[i]!;
        job.pending -= 1;
        if (job.pending === 0) this.finish(job, null);
      });
    } catch (err) {
      const jobs = [...new Set(parts.map((p) => p.job))];
      if (jobs.length === 1) {
        this.finish(jobs[0]!, err);
        return;
      }
      for (const job of jobs) await this.score(parts.filter((p) => p.job === job));
    }
  }

  /** Settles a job (err null: resolved with its scores) and takes what is left of it off the queues. */
  private finish(job: Job, err: unknown): void {
    if (job.settled) return;
    job.settled = true;
    job.release();
    const live = this.live.indexOf(job);
    if (live !== -1) {
      this.live.splice(live, 1);
      this.liveTokens -= job.tokensLeft;
    }
    const queued = this.batch.indexOf(job);
    if (queued !== -1) this.batch.splice(queued, 1);
    if (err === null) job.resolve({ groups: job.scores, cachedTokens: job.cachedTokens });
    else job.reject(err);
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
