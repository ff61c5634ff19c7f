// The TypeSafe System One wire format (`POST /v1/systemone`) as TypeBox schemas: the OpenAPI
// document lists them for the route, and the types below are what validate.ts and respond.ts
// produce. Sources, and what differs on purpose: docs/compatibility.md ("Sources",
// "/v1/systemone field by field"). The schemas document; validate.ts decides. The counts and
// lengths are the validators' own (QUESTION_LIMITS, DEFAULT_VALIDATION_LIMITS), read here, never
// written again.
import { Type, type Static } from '@sinclair/typebox';
import { QUESTION_LIMITS } from '../../domain/question-limits.js';
import { DEFAULT_VALIDATION_LIMITS } from '../validate.js';

const { maxKeyLength, maxDescriptionLength, maxInstructionsLength } = DEFAULT_VALIDATION_LIMITS;

/**
 * Caller text: a string within `lengths`, or an object/array the model reads as compact JSON (that
 * text is held to the same lengths).
 */
const structuredText = (lengths: { minLength?: number; maxLength: number }, description?: string) =>
  Type.Union([Type.String(lengths), Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())], description ? { description } : {});
const Description = structuredText({ maxLength: maxDescriptionLength });
/** Question ids and choice option names. */
const KeyName = Type.String({ minLength: 1, maxLength: maxKeyLength });

export const SystemOneQuestionSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('noul'), Type.Literal('choice'), Type.Literal('score')]),
    instructions: structuredText({ minLength: 1, maxLength: maxInstructionsLength }, `Required; 1 to ${maxInstructionsLength} characters as text, not only whitespace.`),
    criteria: Type.Optional(
      Type.Union([
        Type.Object(
          { true: Type.Optional(Type.Union([Description, Type.Null()])), false: Type.Optional(Type.Union([Description, Type.Null()])) },
          { additionalProperties: false, description: 'noul: what yes (true) and no (false) mean; optional (null: none).' },
        ),
        Type.Record(Type.String(), Type.Union([Description, Type.Null()]), {
          minProperties: QUESTION_LIMITS.minOptions,
          maxProperties: QUESTION_LIMITS.maxOptions,
          propertyNames: KeyName,
          description: `choice: option name -> description or null (${QUESTION_LIMITS.minOptions} to ${QUESTION_LIMITS.maxOptions} options).`,
        }),
        Type.Array(Description, {
          minItems: QUESTION_LIMITS.minLevels,
          maxItems: QUESTION_LIMITS.maxLevels,
          description: `score: the ordered levels (${QUESTION_LIMITS.minLevels} to ${QUESTION_LIMITS.maxLevels}); a level's index is its number.`,
        }),
      ]),
    ),
  },
  { additionalProperties: false },
);

export const SystemOneRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, description: 'An installed model id or alias (GET /v1/models).' }),
    state: Type.Union([Type.String(), Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())], {
      description: 'Text, or an object/array sent to the model as compact JSON.',
    }),
    questions: Type.Record(Type.String(), SystemOneQuestionSchema, {
      minProperties: 1,
      maxProperties: QUESTION_LIMITS.maxQuestions,
      propertyNames: KeyName,
      description: 'Caller-chosen id -> question; answers come back under the same ids.',
    }),
  },
  { additionalProperties: false },
);

const Probability = Type.Number({ minimum: 0, maximum: 1 });
const Confidence = Type.Number({
  minimum: 0,
  maximum: 1,
  description: '(p_max - 1/N) / (1 - 1/N) over the N options: 0 for a flat distribution, 1 for a certain one.',
});

export const SystemOneNoulAnswerSchema = Type.Object({
  type: Type.Literal('noul'),
  noul: Type.Number({ minimum: 0, maximum: 1, description: 'P(yes).' }),
});
export type SystemOneNoulAnswer = Static<typeof SystemOneNoulAnswerSchema>;

export const SystemOneChoiceAnswerSchema = Type.Object({
  type: Type.Literal('choice'),
  choice: Type.String({ description: 'The most probable option (ties: the first in criteria order).' }),
  probabilities: Type.Record(Type.String(), Probability, { description: 'Keyed exactly by the criteria keys; sums to 1.' }),
  confidence: Confidence,
});
export type SystemOneChoiceAnswer = Static<typeof SystemOneChoiceAnswerSchema>;

export const SystemOneScoreAnswerSchema = Type.Object({
  type: Type.Literal('score'),
  score: Type.Number({ description: 'Σ i·p_i over the levels 0..N-1.' }),
  legend: Type.Record(Type.String(), Type.Unknown(), { description: '"0", "1", ... -> the level as given.' }),
  probabilities: Type.Record(Type.String(), Probability, { description: '"0", "1", ... -> probability; sums to 1.' }),
  confidence: Confidence,
});
export type SystemOneScoreAnswer = Static<typeof SystemOneScoreAnswerSchema>;

export type SystemOneAnswer = SystemOneNoulAnswer | SystemOneChoiceAnswer | SystemOneScoreAnswer;

export const SystemOneResponseSchema = Type.Object({
  model: Type.String({ description: 'The resolved, dated model id that answered.' }),
  answers: Type.Record(Type.String(), Type.Union([SystemOneNoulAnswerSchema, SystemOneChoiceAnswerSchema, SystemOneScoreAnswerSchema])),
  usage: Type.Object({
    input_tokens: Type.Integer({ minimum: 0, description: 'Prompt tokens read: the state prefix once plus each question.' }),
    output_tokens: Type.Integer({ minimum: 0, description: 'One per question: the label token read for each; two for a question of more than 26 options (its code).' }),
  }),
});
export type SystemOneResponse = Static<typeof SystemOneResponseSchema>;

/** One problem of a 422 body, in the shape FastAPI/Pydantic gives it. */
export interface SystemOneProblem {
  type: string;
  loc: Array<string | number>;
  msg: string;
}

export const SystemOneErrorSchema = Type.Object(
  {
    detail: Type.Union([
      Type.String(),
      Type.Object({ error_type: Type.String(), message: Type.Optional(Type.String()) }),
      Type.Array(Type.Object({ type: Type.String(), loc: Type.Array(Type.Union([Type.String(), Type.Integer()])), msg: Type.String() })),
    ]),
  },
  {
    description:
      'System One errors: {"detail": ...} as a string (a limit), {error_type, message}, or a list of problems (422). ' +
      'The x-typesafe-request-id header names the request.',
  },
);
