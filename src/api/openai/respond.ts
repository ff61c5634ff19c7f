// A domain result -> OpenAI's `Decision` body (the SDK's resources/decisions.ts):
//   answers in question order, `name` echoed (null when unnamed);
//   predicate {type, name, probability}            probability = P(yes)
//   choice    {type, name, choice, probabilities: [{value, probability}], confidence}
//   score     {type, name, score, probabilities: [{value: i, label, probability}], confidence}
//   usage     {input_tokens, input_tokens_details: {cached_tokens, cache_write_tokens: 0},
//              output_tokens (one answer token a question, two for a code), output_tokens_details, total_tokens}
// confidence = p_max, the chosen option's probability, as on /v1/decide. OpenAI does not define it;
// vLLM reports the chosen label's share of the whole vocabulary (p_max x label mass), which equals
// p_max whenever the model answers with a label at all; our probabilities are calibrated over the
// options, so p_max is the number that means what a caller expects.
import type { DecisionResult } from '../../domain/decision.js';
import { expectedLevel } from '../dialect.js';
import type { DecisionAnswerBody, DecisionBody } from './schemas.js';
import type { DecisionsCall } from './validate.js';

/**
 * The OpenAI body for a scored request.
 * @example
 * const body = respondDecisions(parsed.call, await service.decideNormalized(parsed.call.request));
 */
export function respondDecisions(call: DecisionsCall, result: DecisionResult): DecisionBody {
  const answers = call.questions.map((q, i): DecisionAnswerBody => {
    const a = result.answers[String(i)]!;
    const byPosition = (n: number) => Array.from({ length: n }, (_, j) => a.probs[String(j)]!);
    switch (q.type) {
      case 'predicate':
        return { type: 'predicate', name: q.name, probability: a.probs.yes! };
      case 'choice': {
        const values = q.values!;
        const p = byPosition(values.length);
        return {
          type: 'choice',
          name: q.name,
          choice: values[Number(a.top)]!,
          probabilities: values.map((value, j) => ({ value, probability: p[j]! })),
          confidence: a.confidence,
        };
      }
      case 'score': {
        const labels = q.labels!;
        const p = byPosition(labels.length);
        return {
          type: 'score',
          name: q.name,
          score: expectedLevel(p),
          probabilities: labels.map((label, j) => ({ value: j, label, probability: p[j]! })),
          confidence: a.confidence,
        };
      }
    }
  });
  const input = result.inputTokens;
  const output = result.outputTokens;
  return {
    model: result.model,
    answers,
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: result.cachedTokens, cache_write_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + output,
    },
  };
}
