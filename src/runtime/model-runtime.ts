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
import { LabelSet } from './labels.js';
import { PromptRenderer } from './prompt.js';
import { Scheduler, type Priority, type SchedulerOptions } from './scheduler.js';
import { TextTokenizer } from './tokenizer.js';

export interface ModelRuntimeOptions {
  engine?: Omit<EngineLoadOptions, 'modelDir'>;
  scheduler?: Partial<SchedulerOptions>;
  /** Upper bound on state tokens (ERR_STATE_TOO_LONG above it); default 8192. */
  maxStateTokens?: number;
}

export interface PreparedRequest {
  group: ScoreGroup;
  questions: NormalizedQuestion[];
  /** Per question, the label shown to the model for each option (what the label bias is keyed by). */
  labels: string[][];
  /** Add `label_mass` to every answer. */
  labelMass: boolean;
  /** Prompt tokens the model reads: the prefix once plus every suffix. */
  inputTokens: number;
}

export interface ScoredRequest {
  answers: Record<string, DecisionAnswer>;
  inputTokens: number;
  cachedTokens: number;
  /** The uncalibrated scores behind the answers, per question in request order (for `decide calibrate`). */
  raw: RawQuestionScore[];
}

export interface RawQuestionScore {
  questionId: string;
  /** Label shown for each option, in option order. */
  labels: string[];
  /** The engine's label-token logits, in option order, before any calibration. */
  labelLogits: Float32Array;
  /** log-sum-exp over the whole vocabulary at the answer position. */
  logSumExp: number;
}

interface SuffixTokens {
  tokens: Int32Array;
  labels: Int32Array;
  shown: string[];
}

/** Share of the next-token probability that falls on the option labels: sum of exp(logit - logSumExp). */
export function labelMass(labelLogits: ArrayLike<number>, logSumExp: number): number {
  let mass = 0;
  for (let i = 0; i < labelLogits.length; i++) mass += Math.exp(labelLogits[i]! - logSumExp);
  // Float32 logits against a float32 log-sum-exp can overshoot 1 by rounding.
  return Math.min(1, mass);
}

/** Suffix token ids by question content: batch jobs ask the same questions of every record. */
class SuffixCache {
  private readonly entries = new Map<string, Promise<SuffixTokens>>();
  constructor(private readonly capacity = 4096) {}
  get(key: string, make: () => Promise<SuffixTokens>) {
    let hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    hit = make();
    hit.catch(() => this.entries.delete(key));
    this.entries.set(key, hit);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return hit;
  }
}

export class ModelRuntime {
  private readonly suffixes = new SuffixCache();

  private constructor(
    readonly id: string,
    readonly dir: string,
    readonly engine: Engine,
    readonly scheduler: Scheduler,
    private readonly tokenizer: TextTokenizer,
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
    try {
      const tokenizer = await TextTokenizer.load(dir);
      const renderer = await PromptRenderer.load(dir);
      const labels = await LabelSet.build(tokenizer, { context: renderer.labelContext });
      const calibration = await loadCalibration(dir);
      engine = await Engine.load({ ...options.engine, modelDir: dir });
      const overhead = (await tokenizer.encode(renderer.renderPrefix(''))).length;
      const scheduler = new Scheduler(engine, options.scheduler);
      return new ModelRuntime(id, dir, engine, scheduler, tokenizer, renderer, labels, calibration, overhead, options.maxStateTokens ?? 8192);
    } catch (err) {
      engine?.close();
      if (isEngineError(err)) throw err;
      throw new EngineError('ERR_MODEL_LOAD', `model ${id}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
  }

  /**
   * Tokenizes a validated request; throws ERR_INPUT naming a question that cannot fit the context
   * whatever the state, then ERR_STATE_TOO_LONG when the state does not fit.
   */
  async prepare(request: NormalizedDecideRequest): Promise<PreparedRequest> {
    const prefix = await this.tokenizer.encode(this.renderer.renderPrefix(request.stateText));
    const suffixes = await Promise.all(request.questions.map((q) => this.suffixFor(q)));
    const context = this.engine.info.maxContext;
    // A question that does not fit even with an empty state is the question's fault, not the state's.
    request.questions.forEach((q, i) => {
      const alone = this.prefixOverhead + suffixes[i]!.tokens.length;
      if (alone > context) {
        throw new EngineError(
          'ERR_INPUT',
          `questions[${quote(q.id)}]: its instructions and options take ${alone} tokens with the prompt, more than the model's context of ${context} tokens even with an empty state; shorten the instructions or the option descriptions`,
        );
      }
    });
    const longestSuffix = Math.max(...suffixes.map((s) => s.tokens.length));
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
    const inputTokens = prefix.length + suffixes.reduce((n, s) => n + s.tokens.length, 0);
    return {
      group: { prefix, suffixes: suffixes.map((s) => ({ tokens: s.tokens, labels: s.labels })) },
      questions: request.questions,
      labels: suffixes.map((s) => s.shown),
      labelMass: request.labelMass ?? false,
      inputTokens,
    };
  }

  /** Scores prepared requests through the scheduler (one job: they share an engine call). */
  async score(prepared: PreparedRequest[], priority: Priority = 'live'): Promise<ScoredRequest[]> {
    const result = await this.scheduler.submit(
      prepared.map((p) => p.group),
      priority,
    );
    return prepared.map((p, i) => ({
      answers: this.answers(p, result.groups[i]!),
      inputTokens: p.inputTokens,
      cachedTokens: result.cachedTokens[i]!,
      raw: p.questions.map((q, j) => ({
        questionId: q.id,
        labels: p.labels[j]!,
        labelLogits: result.groups[i]![j]!.labelLogits,
        logSumExp: result.groups[i]![j]!.logSumExp,
      })),
    }));
  }

  /** Calibrated answers: this version's temperature and label bias for each question's type. */
  answers(prepared: PreparedRequest, scores: SuffixScore[]): Record<string, DecisionAnswer> {
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

  /** The calibration this version answers with (from its decision.json). */
  get calibrationInUse(): Calibration {
    return this.calibration;
  }

  close(): void {
    this.engine.close();
  }

  private suffixFor(q: NormalizedQuestion): Promise<SuffixTokens> {
    const key = JSON.stringify([q.type, q.instructions, q.options.map((o) => [o.key, o.description])]);
    return this.suffixes.get(key, async () => {
      const { labels, labelIds } = await this.labels.forQuestion(q);
      const tokens = await this.tokenizer.encode(this.renderer.renderSuffix(q, labels));
      return { tokens, labels: labelIds, shown: labels };
    });
  }
}

/** label_mass as reported: 6 significant digits (a tiny mass is the signal, so not 6 decimals). */
function roundMass(mass: number): number {
  return mass === 0 ? 0 : Number(mass.toPrecision(6));
}
