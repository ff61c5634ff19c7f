/**
 * Scheduler: coalesces concurrent work for one engine into shared engine calls.
 *
 * - Live (/v1/decide) jobs wait at most `windowMs` for companions, or less when the queued tokens
 *   reach `maxCallTokens`; jobs that arrive while a call runs form the next call, which starts as
 *   soon as the current one ends. One call is in flight per engine.
 * - Batch jobs run only when no live job is queued, one batch job at a time, in engine calls of at
 *   most `maxBatchCallTokens` tokens (a job's groups in order; a group larger than that alone).
 *   Between two calls of a batch job, queued live jobs go first: a live request waits at most one
 *   short engine call behind batch work, however large the batch job.
 * - The live queue is bounded: past `maxQueuedJobs`, submit() rejects with ERR_QUEUE_FULL.
 * - A failed shared call is retried job by job, so one bad job cannot fail its companions.
 * Coalescing never changes results: a row's scores do not depend on what else is in its batch
 * (tested in test/native/engine.test.ts).
 */
import { EngineError } from '../errors/engine-error.js';
import type { Engine, ScoreGroup, SuffixScore } from '../engine/engine.js';

export type Priority = 'live' | 'batch';

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
}

export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = { windowMs: 3, maxCallTokens: 16384, maxQueuedJobs: 512, maxBatchCallTokens: 2048 };

export interface JobResult {
  groups: SuffixScore[][];
  /** Per group: prefix tokens served from the prefix cache. */
  cachedTokens: number[];
}

interface Job {
  groups: ScoreGroup[];
  tokens: number;
  resolve(result: JobResult): void;
  reject(err: unknown): void;
  /** A call with some of its groups has started (a batch job stays queued until its last call). */
  started: boolean;
  /** Groups scored so far (a batch job runs in several calls), and their results. */
  done: number;
  scores: SuffixScore[][];
  cachedTokens: number[];
}

/** The groups [from, to) of a job that go into one engine call. */
interface Part {
  job: Job;
  from: number;
  to: number;
}

export interface SchedulerStats {
  calls: number;
  jobs: number;
  liveQueued: number;
  batchQueued: number;
}

function groupTokens(g: ScoreGroup): number {
  let n = g.prefix.length;
  for (const s of g.suffixes) n += s.tokens.length;
  return n;
}

function tokensOf(groups: ScoreGroup[]): number {
  let n = 0;
  for (const g of groups) n += groupTokens(g);
  return n;
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
    this.options = { ...DEFAULT_SCHEDULER_OPTIONS, ...options };
  }

  /** Queues groups for scoring; resolves with their scores in order. */
  submit(groups: ScoreGroup[], priority: Priority = 'live'): Promise<JobResult> {
    if (priority === 'live' && this.live.length >= this.options.maxQueuedJobs) {
      return Promise.reject(new EngineError('ERR_QUEUE_FULL', 'the engine queue is full; retry shortly'));
    }
    return new Promise<JobResult>((resolve, reject) => {
      const job: Job = { groups, tokens: tokensOf(groups), resolve, reject, started: false, done: 0, scores: [], cachedTokens: [] };
      if (priority === 'live') {
        this.live.push(job);
        this.liveTokens += job.tokens;
      } else {
        this.batch.push(job);
      }
      this.kick(priority);
    });
  }

  getStats(): SchedulerStats {
    return { ...this.stats, liveQueued: this.live.length, batchQueued: this.batch.filter((j) => !j.started).length };
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

  /** The next engine call: queued live jobs whole, else the next slice of the oldest batch job. */
  private takeParts(): Part[] {
    if (this.live.length > 0) {
      const taken: Part[] = [];
      let tokens = 0;
      while (this.live.length > 0) {
        const next = this.live[0]!;
        if (taken.length > 0 && tokens + next.tokens > this.options.maxCallTokens) break;
        const job = this.live.shift()!;
        taken.push({ job, from: 0, to: job.groups.length });
        tokens += next.tokens;
      }
      this.liveTokens -= tokens;
      return taken;
    }
    const job = this.batch[0];
    if (!job) return [];
    // The job stays queued until its last slice is scored.
    let to = job.done;
    let tokens = 0;
    while (to < job.groups.length) {
      const next = groupTokens(job.groups[to]!);
      if (to > job.done && tokens + next > this.options.maxBatchCallTokens) break;
      tokens += next;
      to += 1;
    }
    job.started = true;
    return [{ job, from: job.done, to }];
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
      this.stats.jobs += parts.filter((p) => p.from === 0).length;
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
    const groups = parts.flatMap((p) => (p.from === 0 && p.to === p.job.groups.length ? p.job.groups : p.job.groups.slice(p.from, p.to)));
    this.stats.calls += 1;
    try {
      const result = await this.engine.scoreBatch(groups);
      let at = 0;
      for (const { job, from, to } of parts) {
        const n = to - from;
        job.scores.push(...result.groups.slice(at, at + n));
        job.cachedTokens.push(...result.cachedTokens.subarray(at, at + n));
        job.done = to;
        at += n;
        if (job.done === job.groups.length) this.finish(job, null);
      }
    } catch (err) {
      if (parts.length === 1) {
        this.finish(parts[0]!.job, err);
        return;
      }
      for (const part of parts) await this.score([part]);
    }
  }

  /** Settles a job (err null: resolved with its scores) and takes a batch job off its queue. */
  private finish(job: Job, err: unknown): void {
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
