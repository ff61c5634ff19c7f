/**
 * ModelRuntime: everything one loaded model needs to answer questions: the native Engine, its
 * tokenizer, prompt renderer, labels and calibration, and the Scheduler that coalesces its calls.
 * prepare() turns a validated request into token ids (prefix once per state, suffix per question);
 * answers() turns label logits into calibrated answers.
 */
import { quote, type DecisionAnswer, type NormalizedDecideRequest, type NormalizedQuestion } from '../domain/decision.js';
import { objectInOrder } from '../domain/key-order.js';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import { answerFromLogits, labelBiasFor, loadCalibration, type Calibration } from './calibrate.js';
import { Engine, type EngineLoadOptions, type ScoreGroup, type SuffixScore } from '../engine/engine.js';
import { effectiveOption, type EngineOptions } from '../engine/engine-options.js';
import { readModelConfig } from '../engine/model-dir.js';
import { CacheScopes } from './cache-scopes.js';
import { codeGroup, codeLogProbs } from './code-scoring.js';
import { LabelSet, LETTERS, type CodeIds } from './labels.js';
import { PromptRenderer } from './prompt.js';
import { SuffixCache, type SuffixTokens } from './suffix-cache.js';
import { DEFAULT_SCHEDULER_OPTIONS, Scheduler, type Priority, type SchedulerOptions } from './scheduler.js';
import { TokenizerThread } from './tokenizer-thread.js';

/** The most state tokens a request may send unless a service sets maxStateTokens (the model's context may allow fewer). */
export const DEFAULT_MAX_STATE_TOKENS = 8192;

/**
 * The tokens a live engine call holds (the scheduler's maxCallTokens): the scheduler's default, or
 * one forward pass's token budget where that is larger (CUDA's 65,536): a call smaller than a pass
 * adds calls, each with its launch overhead, and no pass is shorter for it.
 */
export function liveCallTokens(engine: EngineOptions): number {
  return Math.max(DEFAULT_SCHEDULER_OPTIONS.maxCallTokens, effectiveOption(engine, 'tokenBudget'));
}

export interface ModelRuntimeOptions {
  engine?: Omit<EngineLoadOptions, 'modelDir'>;
  scheduler?: Partial<SchedulerOptions>;
  /** Upper bound on state tokens (ERR_STATE_TOO_LONG above it); default DEFAULT_MAX_STATE_TOKENS. */
  maxStateTokens?: number;
}

export interface PreparedRequest {
  /** The state's prefix and the suffixes of its questions of up to 26 options (possibly none). */
  group: ScoreGroup;
  /** One group per question of more than 26 options, in question order (code-scoring.ts). */
  codeGroups: ScoreGroup[];
  /** Per question, in request order: where its scores are read. */
  reads: QuestionRead[];
  questions: NormalizedQuestion[];
  /** Per question, the label shown to the model for each option (what the label bias is keyed by). */
  labels: string[][];
  /** Add `label_mass` to every answer. */
  labelMass: boolean;
  /** Prompt tokens the model reads: the prefix once plus every suffix (a code question's letters included). */
  inputTokens: number;
  /** Answer tokens read: one a question, two for a question answered with a two-token code. */
  outputTokens: number;
}

/** A question's scores: suffix `suffix` of the state group, or code group `codeGroup` read as codes. */
export type QuestionRead = { suffix: number } | { codeGroup: number; codes: CodeIds };

/** The engine groups of a prepared request: the state group when it has questions, then the code groups. */
export function engineGroups(prepared: PreparedRequest): ScoreGroup[] {
  return prepared.group.suffixes.length > 0 ? [prepared.group, ...prepared.codeGroups] : prepared.codeGroups;
}

export interface ScoredRequest {
  answers: Record<string, DecisionAnswer>;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** The uncalibrated scores behind the answers, per question in request order (for `decide calibrate`). */
  raw: RawQuestionScore[];
}

export interface RawQuestionScore {
  questionId: string;
  /** Label shown for each option, in option order. */
  labels: string[];
  /**
   * The engine's label-token logits, in option order, before any calibration (more than 26
   * options: each code's joint log-probability, code-scoring.ts).
   */
  labelLogits: Float32Array | Float64Array;
  /** log-sum-exp over the whole vocabulary at the answer position (0 for codes: already log-probabilities). */
  logSumExp: number;
}

/** Share of the next-token probability that falls on the option labels: sum of exp(logit - logSumExp). */
export function labelMass(labelLogits: ArrayLike<number>, logSumExp: number): number {
  let mass = 0;
  for (let i = 0; i < labelLogits.length; i++) mass += Math.exp(labelLogits[i]! - logSumExp);
  // Float32 logits against a float32 log-sum-exp can overshoot 1 by rounding.
  return Math.min(1, mass);
}

/** A cached suffix whose making was given up by the request that started it (suffixFor makes it again). */
class SuffixAbandoned extends Error {
  constructor() {
    super('the request that tokenized this question gave up');
  }
}

/** Characters of a long state tokenized at a time when counting it against the limit. */
const STATE_SLICE_CHARS = 8_192;

export class ModelRuntime {
  private readonly suffixes = new SuffixCache();
  /** Callers' cache scopes (prepare's `cacheScope`) as the engine's integers. */
  private readonly cacheScopes = new CacheScopes();
  /** performance.now() when the load finished: a request that waited for the load counts its queue wait from here. */
  readonly readyAt = performance.now();

  private constructor(
    readonly id: string,
    readonly dir: string,
    readonly engine: Engine,
    readonly scheduler: Scheduler,
    private readonly tokenizer: TokenizerThread,
    private readonly renderer: PromptRenderer,
    private readonly labels: LabelSet,
    private readonly calibration: Calibration,
    /** Prefix tokens that are not state (system text and template), measured once. */
    private readonly prefixOverhead: number,
    private readonly maxStateTokens: number,
  ) {}

  /**
   * Loads everything a model directory holds. Any failure is an EngineError: the engine's own
   * codes (ERR_ORT_LOAD, ERR_PROVIDER_UNAVAILABLE, ...) as they are, anything else ERR_MODEL_LOAD
   * naming the model, with the original error as `cause`.
   */
  static async load(id: string, dir: string, options: ModelRuntimeOptions = {}): Promise<ModelRuntime> {
    let engine: Engine | undefined;
    let tokenizer: TokenizerThread | undefined;
    try {
      // In its own thread: building a full-size tokenizer takes about a second of JavaScript.
      tokenizer = await TokenizerThread.load(dir);
      // A tokenizer of another model (added by hand to an import made without one) would make ids
      // past the embedding table, and every request would fail as if it were the caller's fault.
      const { vocabSize } = readModelConfig(dir);
      if (tokenizer.vocabSize > vocabSize) {
        throw new EngineError('ERR_MODEL_LOAD', `the tokenizer's ids go up to ${tokenizer.vocabSize - 1} but config.json's vocab_size is ${vocabSize} (ids 0-${vocabSize - 1}): they do not belong to the same model`);
      }
      const renderer = await PromptRenderer.load(dir);
      const labels = await LabelSet.build(tokenizer, { context: renderer.labelContext });
      const calibration = await loadCalibration(dir);
      engine = await Engine.load({ ...options.engine, modelDir: dir });
      const overhead = (await tokenizer.encode(renderer.renderPrefix(''))).length;
      const scheduler = new Scheduler(engine, { maxCallTokens: liveCallTokens(options.engine ?? {}), ...options.scheduler });
      return new ModelRuntime(id, dir, engine, scheduler, tokenizer, renderer, labels, calibration, overhead, options.maxStateTokens ?? DEFAULT_MAX_STATE_TOKENS);
    } catch (err) {
      engine?.close();
      tokenizer?.close();
      if (isEngineError(err)) throw err;
      throw new EngineError('ERR_MODEL_LOAD', `model ${id}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
  }

  /**
   * Tokenizes a validated request; throws ERR_INPUT naming a question that cannot fit the context
   * whatever the state, then ERR_STATE_TOO_LONG when the state does not fit. `cacheScope`: who may
   * share its state's cached KV (CacheScopes; none: the shared scope).
   */
  async prepare(request: NormalizedDecideRequest, priority: Priority = 'live', cacheScope?: string, signal?: AbortSignal): Promise<PreparedRequest> {
    // A batch's records tokenize in the background: a live request waits behind one of them at most.
    const background = priority === 'batch';
    const suffixes = await this.questionSuffixes(request.questions, background, signal);
    // The questions are checked first: one that cannot fit is the question's fault (400) whatever
    // the state. Then the state: counted in slices first when it is long.
    await this.refuseFarTooLongState(request.stateText, background, signal);
    const prefix = await this.tokenizer.encode(this.renderer.renderPrefix(request.stateText), { background, signal });
    // A code question's rows also read one letter after its prompt.
    const longestSuffix = Math.max(...suffixes.map((s) => s.tokens.length + (s.codes ? 1 : 0)));
    const stateTokens = Math.max(0, prefix.length - this.prefixOverhead);
    const contextRoom = this.engine.info.maxContext - longestSuffix - this.prefixOverhead;
    const limit = Math.min(this.maxStateTokens, contextRoom);
    if (prefix.length + longestSuffix > this.engine.info.maxContext || stateTokens > limit) {
      throw new EngineError(
        'ERR_STATE_TOO_LONG',
        `state is ${stateTokens} tokens; the limit for this request is ${Math.max(0, limit)} tokens ` +
          `(model context ${this.engine.info.maxContext}, longest question ${longestSuffix} tokens, state limit ${this.maxStateTokens}); trim the state or split it across requests`,
      );
    }
    // A code question's model also reads each letter in use after its prompt (the digit's context).
    const inputTokens = prefix.length + suffixes.reduce((n, s) => n + s.tokens.length + (s.codes?.letterIds.length ?? 0), 0);
    const outputTokens = suffixes.reduce((n, s) => n + (s.codes ? 2 : 1), 0);
    const scope = this.cacheScopes.idOf(cacheScope);
    const group: ScoreGroup = { prefix, suffixes: [], cacheScope: scope };
    const codeGroups: ScoreGroup[] = [];
    const reads = suffixes.map((s): QuestionRead => {
      if (s.codes) {
        codeGroups.push(codeGroup(prefix, s.tokens, s.codes, scope));
        return { codeGroup: codeGroups.length - 1, codes: s.codes };
      }
      group.suffixes.push({ tokens: s.tokens, labels: s.labels });
      return { suffix: group.suffixes.length - 1 };
    });
    return {
      group,
      codeGroups,
      reads,
      questions: request.questions,
      labels: suffixes.map((s) => s.shown),
      labelMass: request.labelMass ?? false,
      inputTokens,
      outputTokens,
    };
  }

  /**
   * Checks questions as prepare() does before it reads the state: throws ERR_INPUT naming the
   * first one this model cannot label or that cannot fit the context even with an empty state.
   * What a batch's dry run (POST /v1/batches/validate) runs on each record. Each distinct question
   * is tokenized once (the suffix cache), however many records ask it.
   */
  async checkQuestions(questions: readonly NormalizedQuestion[]): Promise<void> {
    await this.questionSuffixes(questions, true);
  }

  /** Each question's suffix tokens, after the checks of checkQuestions(). */
  private async questionSuffixes(questions: readonly NormalizedQuestion[], background: boolean, signal?: AbortSignal): Promise<SuffixTokens[]> {
    const suffixes = await Promise.all(
      questions.map((q) =>
        this.suffixFor(q, background, signal).catch((err: unknown) => {
          // The only input error of labelling: the codes a tokenizer breaks (LabelSet.codeProblem).
          if (isEngineError(err) && err.code === 'ERR_INPUT') {
            throw new EngineError('ERR_INPUT', `questions[${quote(q.id)}]: model ${this.id} takes at most ${LETTERS.length} options per question: ${this.labels.codeProblem}`, {
              field: `questions[${quote(q.id)}]`,
            });
          }
          throw err;
        }),
      ),
    );
    const context = this.engine.info.maxContext;
    // A question that does not fit even with an empty state is the question's fault, not the state's.
    questions.forEach((q, i) => {
      const alone = this.prefixOverhead + suffixes[i]!.tokens.length + (suffixes[i]!.codes ? 1 : 0);
      if (alone > context) {
        throw new EngineError(
          'ERR_INPUT',
          `questions[${quote(q.id)}]: its instructions and options take ${alone} tokens with the prompt, more than the model's context of ${context} tokens even with an empty state; shorten the instructions or the option descriptions`,
          { field: `questions[${quote(q.id)}]` },
        );
      }
    });
    return suffixes;
  }

  /**
   * Throws ERR_STATE_TOO_LONG for a state well over the most any request allows, counted slice by
   * slice before the state is tokenized whole: tokenizing near 1 MiB of text takes the tokenizer's
   * thread seconds, and every other request of the model waits for it. A slice cut inside a word
   * counts a token or two more than the whole text would, which the quarter's margin absorbs; a
   * state under that bound gets the exact count below.
   */
  private async refuseFarTooLongState(stateText: string, background: boolean, signal?: AbortSignal): Promise<void> {
    if (stateText.length <= STATE_SLICE_CHARS) return;
    const most = Math.max(0, Math.min(this.maxStateTokens, this.engine.info.maxContext - this.prefixOverhead));
    const bound = most + Math.max(64, Math.ceil(most / 4));
    let counted = 0;
    for (let at = 0; at < stateText.length; at += STATE_SLICE_CHARS) {
      counted += (await this.tokenizer.encode(stateText.slice(at, at + STATE_SLICE_CHARS), { background, signal })).length;
      if (counted > bound) {
        throw new EngineError(
          'ERR_STATE_TOO_LONG',
          `state is more than ${bound} tokens; the limit for a request is at most ${most} tokens ` +
            `(model context ${this.engine.info.maxContext}, state limit ${this.maxStateTokens}, less the longest question); trim the state or split it across requests`,
        );
      }
    }
  }

  /**
   * Scores prepared requests through the scheduler (one job: they share engine calls). An aborted
   * `signal` drops what is not yet scored and rejects with its reason. `since`: when a live job's
   * wait began (performance.now(); default now), which its queue wait limit counts from.
   */
  async score(prepared: PreparedRequest[], priority: Priority = 'live', signal?: AbortSignal, since?: number): Promise<ScoredRequest[]> {
    const perRequest = prepared.map(engineGroups);
    const result = await this.scheduler.submit(perRequest.flat(), priority, signal, since);
    let at = 0;
    return prepared.map((p, i) => {
      const n = perRequest[i]!.length;
      const groups = result.groups.slice(at, at + n);
      const cached = Array.from(result.cachedTokens.slice(at, at + n));
      at += n;
      const scores = questionScores(p, groups);
      return {
        answers: this.answers(p, scores),
        inputTokens: p.inputTokens,
        outputTokens: p.outputTokens,
        cachedTokens: requestCachedTokens(p, cached),
        raw: p.questions.map((q, j) => ({ questionId: q.id, labels: p.labels[j]!, ...scores[j]! })),
      };
    });
  }

  /**
   * Calibrated answers: this version's temperature and label bias for each question's type.
   * `scores`: per question in request order (questionScores).
   */
  answers(prepared: PreparedRequest, scores: ReadonlyArray<{ labelLogits: ArrayLike<number>; logSumExp: number }>): Record<string, DecisionAnswer> {
    // Keyed by question id in request order, integer-like ids included (jsonInOrder writes it so).
    return objectInOrder(
      prepared.questions.map((q, i) => {
        const { labelLogits, logSumExp } = scores[i]!;
        const bias = labelBiasFor(this.calibration, q.type, prepared.labels[i]!);
        const answer = answerFromLogits(q, labelLogits, this.calibration.temperature[q.type], bias);
        return [q.id, prepared.labelMass ? { ...answer, label_mass: roundMass(labelMass(labelLogits, logSumExp)) } : answer] as const;
      }),
    );
  }

  /** Texts of live requests and of batch records waiting for the tokenizer thread or in it. */
  get tokenizerQueue(): { live: number; batch: number } {
    return this.tokenizer.queue;
  }

  /** The calibration this version answers with (from its decision.json). */
  get calibrationInUse(): Calibration {
    return this.calibration;
  }

  close(): void {
    this.engine.close();
    this.tokenizer.close();
  }

  /**
   * A question's suffix, shared by every request that asks it (SuffixCache). The request that made
   * the entry may give up (its signal aborts) and take the entry down with it: another request
   * waiting on it then makes it again under its own signal, rather than failing for the first one.
   */
  private async suffixFor(q: NormalizedQuestion, background: boolean, signal?: AbortSignal): Promise<SuffixTokens> {
    const key = JSON.stringify([q.type, q.instructions, q.options.map((o) => [o.key, o.description])]);
    for (;;) {
      const made = this.suffixes.get(key, async () => {
        try {
          const { labels, labelIds, codes } = await this.labels.forQuestion(q);
          const tokens = await this.tokenizer.encode(this.renderer.renderSuffix(q, labels), { background, signal });
          return codes ? { tokens, labels: labelIds, shown: labels, codes } : { tokens, labels: labelIds, shown: labels };
        } catch (err) {
          throw signal?.aborted ? new SuffixAbandoned() : err;
        }
      });
      try {
        return await made;
      } catch (err) {
        if (!(err instanceof SuffixAbandoned)) throw err;
        signal?.throwIfAborted(); // this request's own abort: its reason
      }
    }
  }
}

/**
 * Per question in request order, the label scores behind its answer, from the scores of the
 * request's engine groups (engineGroups order): a suffix's label logits as the engine gave them,
 * or a code question's joint log-probabilities (log-sum-exp 0).
 */
export function questionScores(prepared: PreparedRequest, groups: readonly SuffixScore[][]): Array<{ labelLogits: Float32Array | Float64Array; logSumExp: number }> {
  const first = prepared.group.suffixes.length > 0 ? 1 : 0;
  return prepared.reads.map((read) =>
    'suffix' in read ? groups[0]![read.suffix]! : { labelLogits: codeLogProbs(groups[first + read.codeGroup]!, read.codes), logSumExp: 0 },
  );
}

/**
 * The request's prompt tokens served from the prefix cache: the state's cached part once (every
 * group starts with it), plus for each code group the question tokens past the state that were
 * cached too (the same question about the same state asked before).
 */
function requestCachedTokens(prepared: PreparedRequest, cached: readonly number[]): number {
  const state = prepared.group.prefix.length;
  let total = Math.min(cached[0] ?? 0, state);
  const first = prepared.group.suffixes.length > 0 ? 1 : 0;
  for (let g = first; g < cached.length; g++) total += Math.max(0, cached[g]! - state);
  return total;
}

/** label_mass as reported: 6 significant digits (a tiny mass is the signal, so not 6 decimals). */
function roundMass(mass: number): number {
  return mass === 0 ? 0 : Number(mass.toPrecision(6));
}
