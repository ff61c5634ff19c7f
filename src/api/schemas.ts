// The wire contract of POST /v1/decide as TypeBox schemas (also the source of the OpenAPI doc).
// The schemas describe shapes and the simple limits; rules that JSON Schema cannot say well
// (noul keys, numeric score levels, duplicate levels, nesting depth of `state`) live in
// validate.ts, which is what requests actually go through.
import { Type, type Static } from '@sinclair/typebox';
import { ERROR_CODES } from './errors.js';

/** Limits of the decide request (spec + shared/design/api-decisions.md). */
export const WIRE_LIMITS = Object.freeze({
  minOptions: 2,
  maxOptions: 26,
  maxQuestions: 64,
  /** Question ids and option keys, in characters (code points). */
  maxKeyLength: 128,
  /** Option descriptions, in characters (code points). */
  maxDescriptionLength: 2000,
  /** Question instructions, in characters (code points). Not in the spec: decided here. */
  maxInstructionsLength: 4000,
  /** Nesting depth of an object `state` (the state object itself is depth 1). */
  maxStateDepth: 64,
});

export const QUESTION_TYPES = ['noul', 'choice', 'score'] as const;

export const QuestionTypeSchema = Type.Union(
  QUESTION_TYPES.map((t) => Type.Literal(t)),
  { description: 'noul: a yes/no condition; choice: one of the named options; score: an ordered numeric level.' },
);
export type QuestionType = Static<typeof QuestionTypeSchema>;

const KeyNames = { minLength: 1, maxLength: WIRE_LIMITS.maxKeyLength };

export const CriteriaSchema = Type.Record(
  Type.String(),
  Type.String({ maxLength: WIRE_LIMITS.maxDescriptionLength }),
  {
    minProperties: WIRE_LIMITS.minOptions,
    maxProperties: WIRE_LIMITS.maxOptions,
    propertyNames: KeyNames,
    description:
      'Option key -> option description. Required for choice and score (2 to 26 options). ' +
      'For noul optional; when given its keys are exactly "no" and "yes". ' +
      'For score every key is a numeric level written as a string ("0", "2.5", "-1").',
  },
);
export type Criteria = Static<typeof CriteriaSchema>;

export const QuestionSchema = Type.Object(
  {
    type: QuestionTypeSchema,
    instructions: Type.String({
      minLength: 1,
      maxLength: WIRE_LIMITS.maxInstructionsLength,
      description: 'The question in plain language.',
    }),
    criteria: Type.Optional(CriteriaSchema),
  },
  { additionalProperties: false },
);
export type Question = Static<typeof QuestionSchema>;

export const StateSchema = Type.Union(
  [Type.String(), Type.Record(Type.String(), Type.Unknown())],
  { description: 'What the model looks at: text, or a JSON object (sent to the model as compact JSON).' },
);
export type State = Static<typeof StateSchema>;

export const DecideRequestSchema = Type.Object(
  {
    model: Type.String({
      minLength: 1,
      description: 'Model id: "svc-alpha" (newest installed) or a dated pin such as "svc-alpha-2026-10".',
    }),
    state: StateSchema,
    questions: Type.Record(Type.String(), QuestionSchema, {
      minProperties: 1,
      maxProperties: WIRE_LIMITS.maxQuestions,
      propertyNames: KeyNames,
      description: 'Caller-chosen question id -> question.',
    }),
    label_mass: Type.Optional(
      Type.Boolean({
        description:
          'Diagnostics, default false. When true every answer also carries label_mass: the share of the ' +
          "model's next-token probability that fell on the option labels at all.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type DecideRequest = Static<typeof DecideRequestSchema>;

export const AnswerSchema = Type.Object({
  type: QuestionTypeSchema,
  probs: Type.Record(Type.String(), Type.Number({ minimum: 0, maximum: 1 }), {
    description: 'Option key -> probability; one entry per option, rounded to at most 6 decimals, sum 1 (within 1e-6).',
  }),
  top: Type.String({
    description: 'The option with the highest probability; ties go to the option listed first in criteria (noul: no before yes).',
  }),
  confidence: Type.Number({ minimum: 0, maximum: 1, description: 'probs[top].' }),
  label_mass: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'Only when the request set label_mass: true. The share of the next-token probability on the option labels ' +
        '(before calibration, 6 significant digits). Near 0: the model is not answering this question with any of its options.',
    }),
  ),
});
export type Answer = Static<typeof AnswerSchema>;

export const UsageSchema = Type.Object({
  input_tokens: Type.Integer({
    minimum: 0,
    description: 'Every token the model read: the prompt prefix once plus each question suffix.',
  }),
  cached_tokens: Type.Integer({
    minimum: 0,
    description: 'The part of input_tokens served from the prefix cache.',
  }),
});
export type Usage = Static<typeof UsageSchema>;

export const DecideResponseSchema = Type.Object({
  id: Type.String({
    pattern: '^dec_[0-9A-HJKMNP-TV-Z]{26}$',
    description: 'Request id ("dec_" + ULID). Store it with each decision for audits.',
  }),
  model: Type.String({ description: 'The resolved, dated model id that produced the answers.' }),
  answers: Type.Record(Type.String(), AnswerSchema, {
    description: 'One answer per question id of the request.',
  }),
  usage: UsageSchema,
});
export type DecideResponse = Static<typeof DecideResponseSchema>;

export const ErrorCodeSchema = Type.Union(ERROR_CODES.map((c) => Type.Literal(c)));

export const ErrorSchema = Type.Object({
  code: ErrorCodeSchema,
  message: Type.String({ description: 'Human-readable text.' }),
  request_id: Type.String({ description: 'The request id, also sent in the x-request-id header.' }),
});
export type ErrorResponse = Static<typeof ErrorSchema>;
