// OpenAI's `POST /v1/decisions` wire format as TypeBox schemas, for the OpenAPI document and the
// types validate.ts and respond.ts produce. Sources: the `openai` SDK's resources/decisions.ts
// (7.x) and the others docs/compatibility.md ("Sources") lists; what differs on purpose:
// docs/compatibility.md. The schemas document; validate.ts decides. The counts and lengths are
// the validators' own (QUESTION_LIMITS, DEFAULT_VALIDATION_LIMITS), read here, never written again.
import { Type, type Static } from '@sinclair/typebox';
import { QUESTION_LIMITS } from '../../domain/question-limits.js';
import { DEFAULT_VALIDATION_LIMITS } from '../validate.js';

const { maxKeyLength, maxDescriptionLength, maxInstructionsLength } = DEFAULT_VALIDATION_LIMITS;

const CacheBreakpoint = Type.Optional(Type.Unknown({ description: 'Accepted and ignored: the prefix cache is automatic.' }));
const TextPart = Type.Object({ type: Type.Literal('input_text'), text: Type.String(), prompt_cache_breakpoint: CacheBreakpoint }, { additionalProperties: false });
const JsonPart = Type.Object(
  {
    type: Type.Literal('input_json'),
    data: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())]),
    prompt_cache_breakpoint: CacheBreakpoint,
  },
  { additionalProperties: false, description: 'Structured state: read by the model as compact JSON.' },
);

const Message = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('system'), Type.Literal('developer')]),
    content: Type.Union([Type.String(), Type.Array(Type.Union([TextPart, JsonPart]), { minItems: 1 })]),
    type: Type.Optional(Type.Literal('message')),
  },
  { additionalProperties: false, description: 'Images, assistant messages, tool calls and tool outputs get a 400: this server scores text.' },
);

const Instructions = Type.Union(
  [Type.String({ minLength: 1, maxLength: maxInstructionsLength }), Type.Array(Type.Union([TextPart, JsonPart]), { minItems: 1 })],
  { description: `1 to ${maxInstructionsLength} characters as text (parts joined by a blank line, input_json as compact JSON), not only whitespace.` },
);
const Name = Type.Optional(Type.Union([Type.String(), Type.Null()]));
const Description = Type.Optional(
  Type.Union([Type.String({ maxLength: maxDescriptionLength }), Type.Null()], { description: 'Blank or null: none (the model reads the value, or the label alone).' }),
);
/** A choice value or a level label: 1 to maxKeyLength characters, not only whitespace. */
const ShortText = Type.String({ minLength: 1, maxLength: maxKeyLength });

export const DecisionQuestionSchema = Type.Union([
  Type.Object({ type: Type.Literal('predicate'), instructions: Instructions, name: Name }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('choice'),
      instructions: Instructions,
      name: Name,
      choices: Type.Array(
        Type.Object({ value: Type.Union([ShortText, Type.Boolean()]), description: Description }, { additionalProperties: false }),
        { minItems: QUESTION_LIMITS.minOptions, maxItems: QUESTION_LIMITS.maxOptions },
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: Type.Literal('score'),
      instructions: Instructions,
      name: Name,
      levels: Type.Array(Type.Object({ label: ShortText, description: Description }, { additionalProperties: false }), {
        minItems: QUESTION_LIMITS.minLevels,
        maxItems: QUESTION_LIMITS.maxLevels,
      }),
    },
    { additionalProperties: false },
  ),
]);

export const DecisionCreateSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'An installed model id or alias (GET /v1/models).' }),
    input: Type.Union([Type.String(), Type.Array(Message, { minItems: 1 })]),
    questions: Type.Array(DecisionQuestionSchema, { minItems: 1, maxItems: QUESTION_LIMITS.maxQuestions, description: 'Answers come back in this order.' }),
    safety_identifier: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Accepted and ignored.' })),
    prompt_cache_key: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Accepted and ignored: the prefix cache is automatic.' })),
    prompt_cache_options: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'Accepted and ignored.' })),
  },
  { additionalProperties: false },
);

export type DecisionValue = string | boolean;

export interface DecisionPredicateAnswer {
  type: 'predicate';
  name: string | null;
  probability: number;
}
export interface DecisionChoiceAnswer {
  type: 'choice';
  name: string | null;
  choice: DecisionValue;
  probabilities: Array<{ value: DecisionValue; probability: number }>;
  confidence: number;
}
export interface DecisionScoreAnswer {
  type: 'score';
  name: string | null;
  score: number;
  probabilities: Array<{ value: number; label: string; probability: number }>;
  confidence: number;
}
export type DecisionAnswerBody = DecisionPredicateAnswer | DecisionChoiceAnswer | DecisionScoreAnswer;

const Probability = Type.Number({ minimum: 0, maximum: 1 });
const Confidence = Type.Number({ minimum: 0, maximum: 1, description: 'The probability of the chosen option (p_max).' });

export const DecisionSchema = Type.Object({
  model: Type.String({ description: 'The resolved, dated model id that answered.' }),
  answers: Type.Array(
    Type.Union([
      Type.Object({ type: Type.Literal('predicate'), name: Type.Union([Type.String(), Type.Null()]), probability: Probability }),
      Type.Object({
        type: Type.Literal('choice'),
        name: Type.Union([Type.String(), Type.Null()]),
        choice: Type.Union([Type.String(), Type.Boolean()]),
        probabilities: Type.Array(Type.Object({ value: Type.Union([Type.String(), Type.Boolean()]), probability: Probability })),
        confidence: Confidence,
      }),
      Type.Object({
        type: Type.Literal('score'),
        name: Type.Union([Type.String(), Type.Null()]),
        score: Type.Number({ description: 'Σ i·p_i over the levels 0..N-1.' }),
        probabilities: Type.Array(Type.Object({ value: Type.Integer(), label: Type.String(), probability: Probability })),
        confidence: Confidence,
      }),
    ]),
    { description: 'In question order.' },
  ),
  usage: Type.Object({
    input_tokens: Type.Integer({ description: 'Prompt tokens read: the input prefix once plus each question.' }),
    input_tokens_details: Type.Object({
      cached_tokens: Type.Integer({ description: 'The part of input_tokens served from the prefix cache.' }),
      cache_write_tokens: Type.Integer({ description: 'Always 0 (not measured).' }),
    }),
    output_tokens: Type.Integer({ description: 'One per question: the label token read for each; two for a question of more than 26 options (its code).' }),
    output_tokens_details: Type.Object({ reasoning_tokens: Type.Integer({ description: 'Always 0.' }) }),
    total_tokens: Type.Integer(),
  }),
});
export type DecisionBody = Static<typeof DecisionSchema>;

export const OpenAiErrorSchema = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String({ description: 'invalid_request_error, authentication_error, rate_limit_error, server_error.' }),
      param: Type.Union([Type.String(), Type.Null()], { description: 'The offending field, e.g. questions[0].choices.' }),
      code: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { description: "OpenAI's error shape; the SDK raises BadRequestError (400), AuthenticationError (401), NotFoundError (404), RateLimitError (429)." },
);
export type OpenAiErrorBody = Static<typeof OpenAiErrorSchema>;
