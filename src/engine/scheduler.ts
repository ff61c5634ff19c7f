/**
 * Scheduler: coalesces concurrent work for one engine into shared engine calls.
 *
 * - Live (/v1/decide) jobs wait at most `windowMs` for companions, or less when the queued tokens
 *   reach `maxCallTokens`; jobs that arrive while a call runs form the next call, which starts as
 *   soon as the current one ends. One call is in flight per engine.
 * - Batch jobs run only when no live job is queued, one batch job per call: a live request waits at
 *   most one engine call behind batch work.
 * - The live queue is bounded: past `maxQueuedJobs`, submit() rejects with ERR_QUEUE_FULL.
 * - A failed shared call is retried job by job, so one bad job cannot fail its companions.
 * Coalescing never changes results: a row's scores do not depend on what else is in its batch
 * (tested in test/native/engine.test.ts).
 */
import { EngineError } from '../errors/engine-error.js';
import type { Engine, ScoreGroup, SuffixScore } from './engine.js';

export type Priority = 'live' | 'batch';

export interface SchedulerOptions {
  /** How long the first live job of a call waits for companions. */
  windowMs: number;
  /** Tokens (prefix + suffixes) that start a call at once. */
  maxCallTokens: number;
  /** Live jobs that may wait; more are refused with ERR_QUEUE_FULL. */
  maxQueuedJobs: number;
}

export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = { windowMs: 3, maxCallTokens: 16384, maxQueuedJobs: 512 };

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
}

export interface SchedulerStats {
  calls: number;
  jobs: number;
  liveQueued: number;
  batchQueued: number;
}

function tokensOf(groups: ScoreGroup[]): number {
  let n = 0;
  for (const g of groups) {
    n += g.prefix.length;
    for (const s of g.suffixes) n += s.tokens.length;
  }
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
      const job: Job = { groups, tokens: tokensOf(groups), resolve, reject };
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
    return { ...this.stats, liveQueued: this.live.length, batchQueued: this.batch.length };
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

  private takeJobs(): Job[] {
    if (this.live.length > 0) {
      const taken: Job[] = [];
      let tokens = 0;
      while (this.live.length > 0) {
        const next = this.live[0]!;
        if (taken.length > 0 && tokens + next.tokens > this.options.maxCallTokens) break;
        taken.push(this.live.shift()!);
        tokens += next.tokens;
      }
      this.liveTokens -= tokens;
      return taken;
    }
    return this.batch.length > 0 ? [this.batch.shift()!] : [];
  }

  private async runCall(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.running) return;
    const jobs = this.takeJobs();
    if (jobs.length === 0) {
      this.notifyIdle();
      return;
    }
    this.running = true;
    try {
      await this.score(jobs);
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

  private async score(jobs: Job[]): Promise<void> {
    const groups = jobs.flatMap((j) => j.groups);
    this.stats.calls += 1;
    this.stats.jobs += jobs.length;
    try {
      const result = await this.engine.scoreBatch(groups);
      let at = 0;
      for (const job of jobs) {
        const n = job.groups.length;
        job.resolve({
          groups: result.groups.slice(at, at + n),
          cachedTokens: Array.from(result.cachedTokens.subarray(at, at + n)),
        });
        at += n;
      }
    } catch (err) {
      if (jobs.length === 1) {
        jobs[0]!.reject(err);
        return;
      }
      for (const job of jobs) await this.score([job]);
    }
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
