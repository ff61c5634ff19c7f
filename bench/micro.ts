/**
 * Micro-benchmarks (benchmark.js) of the TypeScript hot paths around the engine call, so the cost
 * outside the forward passes is visible next to it:
 *   validate      validateDecideRequest on a tickets request (8 questions)
 *   render        prompt rendering of the prefix and of the 8 suffixes (chat template)
 *   tokenize      tokenizing the rendered prefix (HF tokenizers, async)
 *   prepare       validate + ModelRuntime.prepare: what a request costs before scoring (suffix ids
 *                 come from the runtime's suffix cache after the first request, as in service)
 *   flatten       structured groups -> the flat typed arrays of one engine call (tickets call)
 *   answers       answerFromLogits for the 8 questions of a request
 */
import Benchmark from 'benchmark';

import { validateDecideRequest } from '../src/api/validate.js';
import { answerFromLogits, type Calibration } from '../src/runtime/calibrate.js';
import type { SuffixScore } from '../src/engine/engine.js';
import { flatten } from '../src/engine/score-groups.js';
import type { LabelSet } from '../src/runtime/labels.js';
import type { ModelRuntime } from '../src/runtime/model-runtime.js';
import type { PromptRenderer } from '../src/runtime/prompt.js';
import type { TextTokenizer } from '../src/runtime/tokenizer.js';
import { groupsOf, type BenchItem } from './workloads.js';

export interface MicroContext {
  runtime: ModelRuntime;
  tokenizer: TextTokenizer;
  renderer: PromptRenderer;
  labels: LabelSet;
  calibration: Calibration;
  /** A tickets request and its engine scores (from the check pass). */
  item: BenchItem;
  scores: SuffixScore[];
  /** One engine call's worth of tickets items, for flatten. */
  call: BenchItem[];
  quick: boolean;
}

export interface MicroResult {
  name: string;
  description: string;
  /** Operations per second (benchmark.js hz). */
  hz: number;
  /** Mean microseconds per operation. */
  meanUs: number;
  /** Relative margin of error, percent. */
  rme: number;
  samples: number;
  /** Decisions one operation covers (to compare with the engine's time per decision). */
  decisionsPerOp: number;
}

interface Case {
  name: string;
  description: string;
  decisionsPerOp: number;
  fn: () => unknown | Promise<unknown>;
  async: boolean;
}

export async function runMicro(ctx: MicroContext): Promise<MicroResult[]> {
  const { item } = ctx;
  const questions = item.normalized.questions;
  const decisions = questions.length;
  const labelsPerQuestion = await Promise.all(questions.map((q) => ctx.labels.forQuestion(q)));
  const renderedPrefix = ctx.renderer.renderPrefix(item.normalized.stateText);
  const callGroups = groupsOf(ctx.call);
  const callDecisions = callGroups.reduce((n, g) => n + g.suffixes.length, 0);

  const cases: Case[] = [
    {
      name: 'validate',
      description: `validateDecideRequest, ${decisions} questions`,
      decisionsPerOp: decisions,
      async: false,
      fn: () => validateDecideRequest(item.request),
    },
    {
      name: 'render',
      description: `render prefix + ${decisions} suffixes (chat template)`,
      decisionsPerOp: decisions,
      async: false,
      fn: () => {
        let n = ctx.renderer.renderPrefix(item.normalized.stateText).length;
        questions.forEach((q, i) => (n += ctx.renderer.renderSuffix(q, labelsPerQuestion[i]!.labels).length));
        return n;
      },
    },
    {
      name: 'tokenize',
      description: `tokenize the rendered prefix (${item.prepared.group.prefix.length} tokens)`,
      decisionsPerOp: decisions,
      async: true,
      fn: () => ctx.tokenizer.encode(renderedPrefix),
    },
    {
      name: 'prepare',
      description: 'validate + ModelRuntime.prepare (render, tokenize; suffix ids cached)',
      decisionsPerOp: decisions,
      async: true,
      fn: () => ctx.runtime.prepare(validateDecideRequest(item.request)),
    },
    {
      name: 'flatten',
      description: `Engine flatten() of one call (${callGroups.length} groups, ${callDecisions} suffixes)`,
      decisionsPerOp: callDecisions,
      async: false,
      fn: () => flatten(callGroups),
    },
    {
      name: 'answers',
      description: `answerFromLogits for ${decisions} questions`,
      decisionsPerOp: decisions,
      async: false,
      fn: () => questions.map((q, i) => answerFromLogits(q, ctx.scores[i]!.labelLogits, ctx.calibration.temperature[q.type])),
    },
  ];

  const maxTime = ctx.quick ? 0.1 : 1;
  const results: MicroResult[] = [];
  for (const c of cases) {
    let failure: unknown;
    const bench = c.async
      ? new Benchmark(c.name, {
          defer: true,
          maxTime,
          minSamples: 5,
          fn: (deferred: { resolve(): void; benchmark: Benchmark }) => {
            (c.fn() as Promise<unknown>).then(
              () => deferred.resolve(),
              (err: unknown) => {
                failure ??= err;
                deferred.benchmark.abort();
                deferred.resolve();
              },
            );
          },
        })
      : new Benchmark(c.name, c.fn as () => void, { maxTime, minSamples: 5 });
    await new Promise<void>((resolve) => {
      bench.on('complete', () => resolve());
      bench.on('abort', () => resolve());
      bench.on('error', () => resolve());
      bench.run({ async: true });
    });
    if (failure !== undefined || bench.error) throw new Error(`micro-benchmark ${c.name} failed: ${String(failure ?? bench.error)}`, { cause: failure ?? bench.error });
    results.push({
      name: c.name,
      description: c.description,
      hz: bench.hz,
      meanUs: bench.stats.mean * 1e6,
      rme: bench.stats.rme,
      samples: bench.stats.sample.length,
      decisionsPerOp: c.decisionsPerOp,
    });
  }
  return results;
}
