// A domain result -> System One's 200 body (docs/compatibility.md, field by field):
//   noul   {type, noul}                      noul = P(yes); no confidence (as the vendor)
//   choice {type, choice, probabilities, confidence}   probabilities keyed by the criteria keys
//   score  {type, score, legend, probabilities, confidence}   keyed "0", "1", ...; score = Σ i·p_i
//   usage  {input_tokens, output_tokens}     output_tokens = the answer tokens read (one a question, two for a code)
// confidence = (p_max - 1/N) / (1 - 1/N): the vendor does not publish its formula, but every real
// example in its docs fits this one (docs/compatibility.md); it is 0 for a flat distribution and 1 for a certain one.
import type { DecisionAnswer, DecisionResult } from '../../domain/decision.js';
import { objectInOrder } from '../../domain/key-order.js';
import { expectedLevel, round6 } from '../dialect.js';
import type { SystemOneAnswer, SystemOneResponse } from './schemas.js';
import type { SystemOneCall } from './validate.js';

/** (p_max - 1/N) / (1 - 1/N), in [0, 1], 6 decimals. */
export function systemOneConfidence(probabilities: readonly number[]): number {
  const n = probabilities.length;
  if (n < 2) return 1;
  const max = Math.max(...probabilities);
  return round6(Math.min(1, Math.max(0, (max - 1 / n) / (1 - 1 / n))));
}

function answer(answer: DecisionAnswer, legend: unknown[] | undefined): SystemOneAnswer {
  const values = Object.values(answer.probs);
  switch (answer.type) {
    case 'noul':
      return { type: 'noul', noul: answer.probs.yes! };
    case 'choice':
      return { type: 'choice', choice: answer.top, probabilities: answer.probs, confidence: systemOneConfidence(values) };
    case 'score': {
      // Options are "0".."N-1" in level order; read them by index, not by object key order.
      const levels = (legend ?? []).map((_, i) => answer.probs[String(i)]!);
      return {
        type: 'score',
        score: expectedLevel(levels),
        legend: Object.fromEntries((legend ?? []).map((level, i) => [String(i), level])),
        probabilities: Object.fromEntries(levels.map((p, i) => [String(i), p])),
        confidence: systemOneConfidence(levels),
      };
    }
  }
}

/**
 * The System One body for a scored request; answers keyed by the caller's ids, in request order.
 * @example
 * const body = respondSystemOne(parsed.call, await service.decideNormalized(parsed.call.request));
 */
export function respondSystemOne(call: SystemOneCall, result: DecisionResult): SystemOneResponse {
  // In request order, integer-like ids included; a choice's probabilities keep criteria order (the runtime's probs).
  const answers = objectInOrder(call.request.questions.map((q) => [q.id, answer(result.answers[q.id]!, call.legends.get(q.id))] as const));
  return {
    model: result.model,
    answers,
    usage: { input_tokens: result.inputTokens, output_tokens: result.outputTokens },
  };
}
