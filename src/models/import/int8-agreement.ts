/**
 * How far an int8 model's answers are from its fp32 twin's, measured on generated prompts before
 * the int8 model is served: quantization error depends on the weights, and only the user's own
 * checkpoint can tell. `decide import-model --dtype int8` and `decide make-model --dtype int8` run
 * it (docs/models.md, int8 weights).
 *
 * The prompts are token ids drawn from a fixed-seed generator over the vocabulary: states of a few
 * hundred tokens with several questions each, each question scored over four label tokens, which is
 * what the service turns into option probabilities (softmax over the label logits, temperature 1).
 * Both engines score the same groups in the same calls.
 */
import { Engine } from '../../engine/engine.js';
import type { Int8Info } from '../../engine/int8-graph.js';
import type { Int8PathRequest } from '../../engine/int8-path.js';
import type { ScoreGroup } from '../../engine/score-groups.js';
import { Rng } from '../builder/rng.js';

export interface Int8Agreement {
  /** Questions compared (states x questions per state). */
  rows: number;
  states: number;
  /** Largest |difference| of an option's probability (softmax over the label logits). */
  maxAbsProbDiff: number;
  /** Largest |difference| of a label logit. */
  maxAbsLogitDiff: number;
  /** Questions whose most probable option is the fp32 twin's. */
  topAgreeing: number;
  /** The int8 engine's integer GEMM path (EngineInfo.int8). */
  int8?: Int8Info;
}

export interface Int8AgreementOptions {
  states?: number;
  questionsPerState?: number;
  stateTokens?: number;
  threads?: number;
  seed?: number;
  /** The int8 model's path (default: DECIDE_INT8_KERNEL, else this CPU's; src/engine/int8-path.ts). */
  int8Path?: Int8PathRequest;
}

const OPTIONS_PER_QUESTION = 4;

/** Generated groups over a vocabulary of `vocab` ids (deterministic for a seed). */
export function generatedGroups(vocab: number, opts: Required<Pick<Int8AgreementOptions, 'states' | 'questionsPerState' | 'stateTokens' | 'seed'>>): ScoreGroup[] {
  const rng = new Rng(opts.seed, 'int8-agreement');
  const ids = (n: number) => Int32Array.from({ length: n }, () => rng.nextU32() % vocab);
  return Array.from({ length: opts.states }, () => ({
    prefix: ids(opts.stateTokens),
    suffixes: Array.from({ length: opts.questionsPerState }, (_, q) => ({ tokens: ids(8 + ((q * 5) % 17)), labels: ids(OPTIONS_PER_QUESTION) })),
  }));
}

function softmax(logits: Float32Array): Float64Array {
  const max = Math.max(...logits);
  const e = Float64Array.from(logits, (x) => Math.exp(x - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

function argmax(xs: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[best]!) best = i;
  return best;
}

/** Scores the same generated prompts with both models (each loaded, run, closed in turn) and compares. */
export async function measureInt8Agreement(int8Dir: string, fp32Dir: string, options: Int8AgreementOptions = {}): Promise<Int8Agreement> {
  const opts = { states: options.states ?? 4, questionsPerState: options.questionsPerState ?? 6, stateTokens: options.stateTokens ?? 300, seed: options.seed ?? 1 };
  let int8: Int8Info | undefined;
  const scoreWith = async (dir: string) => {
    const engine = await Engine.load({ modelDir: dir, threads: options.threads, ...(options.int8Path === undefined ? {} : { int8Path: options.int8Path }) });
    try {
      const vocab = engine.config.vocabSize;
      int8 ??= engine.info.int8;
      return await engine.score(generatedGroups(vocab, { ...opts, stateTokens: Math.min(opts.stateTokens, engine.config.maxPositionEmbeddings - 64) }));
    } finally {
      engine.close();
    }
  };
  const quantized = await scoreWith(int8Dir);
  const reference = await scoreWith(fp32Dir);
  let rows = 0;
  let maxAbsProbDiff = 0;
  let maxAbsLogitDiff = 0;
  let topAgreeing = 0;
  quantized.forEach((group, g) =>
    group.forEach((score, q) => {
      const ref = reference[g]![q]!;
      const pa = softmax(score.labelLogits);
      const pb = softmax(ref.labelLogits);
      for (let k = 0; k < pa.length; k++) {
        maxAbsProbDiff = Math.max(maxAbsProbDiff, Math.abs(pa[k]! - pb[k]!));
        maxAbsLogitDiff = Math.max(maxAbsLogitDiff, Math.abs(score.labelLogits[k]! - ref.labelLogits[k]!));
      }
      if (argmax(pa) === argmax(pb)) topAgreeing += 1;
      rows += 1;
    }),
  );
  return { rows, states: opts.states, maxAbsProbDiff, maxAbsLogitDiff, topAgreeing, ...(int8 === undefined ? {} : { int8 }) };
}
