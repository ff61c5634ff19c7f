// The wire contract of the /v1 API as TypeBox schemas: the one definition of every wire type
// (`type X = Static<typeof XSchema>`) and the source of /openapi.json, where the schemas in
// NAMED_SCHEMAS appear under `components.schemas` and the routes point at them with ref().
// The decide request's limits and field lists are written here only: the validator (validate.ts)
// reads them from these objects, and test/unit/decide-contract.test.ts checks that it accepts and
// rejects what a JSON Schema validator does with the published schema. Rules that JSON Schema
// cannot say well (noul keys, numeric score levels, duplicate levels, whitespace-only
// instructions, what an object state may hold) live only in validate.ts.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { QUESTION_TYPES } from '../domain/decision.js';
import { QUESTION_LIMITS } from '../domain/question-limits.js';
import { OpenAiBatchSchema } from './openai/batch-schemas.js';
import { ERROR_CODES } from './errors.js';

export { QUESTION_TYPES };

export const QuestionTypeSchema = Type.Union(
  QUESTION_TYPES.map((t) => Type.Literal(t)),
  { description: 'noul: a yes/no condition; choice: one of the named options; score: an ordered numeric level.' },
);
export type QuestionType = Static<typeof QuestionTypeSchema>;

/** Question ids and option keys. Lengths count characters (code points), as JSON Schema does. */
export const KeyNameSchema = Type.String({ minLength: 1, maxLength: 128 });

export const OptionDescriptionSchema = Type.String({ maxLength: 2000 });

export const CriteriaSchema = Type.Record(Type.String(), OptionDescriptionSchema, {
  minProperties: QUESTION_LIMITS.minOptions,
  maxProperties: QUESTION_LIMITS.maxOptions,
  propertyNames: KeyNameSchema,
  description:
    `Option key -> option description. Required for choice and score (${QUESTION_LIMITS.minOptions} to ${QUESTION_LIMITS.maxOptions} options; past 26 the ` +
    'model reads two-token codes A0..Z4 instead of the letters A..Z). ' +
    'For noul optional; when given its keys are exactly "no" and "yes". ' +
    'For score every key is a numeric level written as a string ("0", "2.5", "-1").',
});
export type Criteria = Static<typeof CriteriaSchema>;

export const QuestionSchema = Type.Object(
  {
    type: QuestionTypeSchema,
    instructions: Type.String({
      minLength: 1,
      // Not in the spec: decided here (docs/api.md).
      maxLength: 4000,
      description: 'The question in plain language.',
    }),
    criteria: Type.Optional(CriteriaSchema),
  },
  { additionalProperties: false },
);
/**
 * One question: `noul` (yes/no), `choice` (named options in `criteria`) or `score` (ordered levels).
 * @example
 * const topic: Question = { type: 'choice', instructions: 'What is it about?', criteria: { payments: 'Charges', other: 'Anything else' } };
 */
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
      maxProperties: QUESTION_LIMITS.maxQuestions,
      propertyNames: KeyNameSchema,
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
/**
 * The body of POST /v1/decide, and what DecisionService.decide takes.
 * @example
 * const req: DecideRequest = { model: 'svc-alpha', state: { ticket: 'Charged twice' }, questions: { refund: { type: 'noul', instructions: 'Refund?' } } };
 */
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
/**
 * One question's answer: a calibrated probability per option, the most probable (`top`) and its probability (`confidence`).
 * @example
 * const answer: Answer = res.answers.refund; // { type: 'noul', probs: { no: 0.3, yes: 0.7 }, top: 'yes', confidence: 0.7 }
 */
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
/**
 * The answer to a DecideRequest: the decision id, the resolved dated model id, one Answer per question id, and usage.
 * @example
 * const res: DecideResponse = await svc.decide(req);
 * console.log(res.model, res.answers.refund.top, res.usage.cached_tokens);
 */
export type DecideResponse = Static<typeof DecideResponseSchema>;

export const ErrorCodeSchema = Type.Union(ERROR_CODES.map((c) => Type.Literal(c)));

export const ErrorSchema = Type.Object({
  code: ErrorCodeSchema,
  message: Type.String({ description: 'Human-readable text.' }),
  request_id: Type.String({ description: 'The request id, also sent in the x-request-id header.' }),
});

// ---- Models ----

const ReliabilityBinSchema = Type.Object({
  confidence: Type.Number({ description: 'Mean top probability of the answers in the bin.' }),
  accuracy: Type.Number({ description: 'Share of those answers that were right.' }),
  count: Type.Integer({ description: 'Answers in the bin.' }),
  low: Type.Optional(Type.Number({ description: 'Lower end of the Wilson 95% interval of the accuracy.' })),
  high: Type.Optional(Type.Number({ description: 'Upper end of that interval.' })),
});

export const HeldOutFiguresSchema = Type.Object(
  {
    ece: Type.Optional(Type.Number({ description: 'ECE after calibration (15 equal-mass bins).' })),
    ece_before: Type.Optional(Type.Number({ description: 'ECE of the base version on the same rows.' })),
    nll: Type.Optional(Type.Number({ description: 'Log-loss after calibration.' })),
    nll_before: Type.Optional(Type.Number({ description: 'Log-loss of the base version.' })),
    uniform_nll: Type.Optional(Type.Number({ description: 'Log-loss of the uniform predictor (1/k per option).' })),
    accuracy: Type.Optional(Type.Number()),
    brier: Type.Optional(Type.Number()),
    observations: Type.Optional(Type.Integer({ description: 'Held-out answers.' })),
    kept: Type.Optional(Type.String({ description: 'The correction kept: base (the base version\'s, unchanged), none, temperature, label_bias or temperature+label_bias.' })),
    poor_fit: Type.Optional(Type.Array(Type.String(), { description: 'Why the fit is poor, one reason each (installed with --accept-poor-fit).' })),
    reliability: Type.Optional(
      Type.Object(
        { before: Type.Array(ReliabilityBinSchema), after: Type.Array(ReliabilityBinSchema) },
        {
          description:
            'The reliability diagram: accuracy against confidence per equal-mass bin (20+ answers each, at most 10), in order of confidence, before and after (versions calibrated since this field exists).',
        },
      ),
    ),
  },
  { additionalProperties: true },
);
export type HeldOutFigures = Static<typeof HeldOutFiguresSchema>;

export const ModelSchema = Type.Object({
  id: Type.String({ description: 'Dated model id, e.g. svc-alpha-2026-10.' }),
  object: Type.Literal('model'),
  created: Type.Integer({ description: "OpenAI's Model field: Unix seconds of the version's date (release_date in the System One list), 00:00 UTC." }),
  owned_by: Type.String({ description: "OpenAI's Model field: always 'decision-engine' (the service's own installs)." }),
  alias: Type.Optional(Type.String({ description: 'The undated alias this id belongs to.' })),
  loaded: Type.Boolean({ description: 'Whether the model is loaded in this process.' }),
  status: Type.Union([Type.Literal('ok'), Type.Literal('broken')], {
    description: "'broken': loading this version failed (see error); its alias stays on the newest version that loads. Tried again once its files change.",
  }),
  error: Type.Optional(Type.String({ description: 'Why a broken version could not be loaded.' })),
  calibrated: Type.Boolean({ description: 'Whether its decision.json carries a calibration (a temperature other than 1, a label bias, or a fit).' }),
  held_out_ece: Type.Optional(
    Type.Record(Type.String(), Type.Number(), {
      description: 'Question type -> ECE (15 equal-mass bins) on the held-out rows of the `decide calibrate` fit.',
    }),
  ),
  held_out: Type.Optional(
    Type.Record(Type.String(), HeldOutFiguresSchema, {
      description: 'Question type -> the held-out figures of the `decide calibrate` fit (from decision.json), for the console and dashboards.',
    }),
  ),
  calibrated_from: Type.Optional(Type.String({ description: 'The version the calibration was fitted on (same weights).' })),
  calibrated_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the calibration was fitted.' })),
});
export type ModelEntry = Static<typeof ModelSchema>;

export const ModelListingSchema = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ModelSchema),
  aliases: Type.Record(Type.String(), Type.String(), {
    description: 'Undated alias -> the dated id it resolves to now (the newest installed version that is not broken).',
  }),
  incomplete: Type.Optional(
    Type.Array(Type.Object({ id: Type.String(), reason: Type.String() }), {
      description: 'Directories of the models directory skipped as incomplete (e.g. no weights yet), with the reason; not models.',
    }),
  ),
  models: Type.Array(
    Type.Object({
      name: Type.String({ description: 'An alias or a dated id: what a request names in `model`.' }),
      description: Type.String(),
      release_date: Type.String({ description: 'YYYY-MM-DD: the date of the dated id (the first of its month for YYYY-MM); the date a model is served from when it has none.' }),
    }),
    {
      description:
        "The same models in TypeSafe System One's form (its GET /v1/models), for its clients: every alias, then every dated id that loads.",
    },
  ),
});
/**
 * GET /v1/models and DecisionService.listModels(): the versions, the aliases and the skipped directories.
 * @example
 * const { aliases } = svc.listModels(); // { 'svc-alpha': 'svc-alpha-2026-10' }
 */
export type ModelListing = Static<typeof ModelListingSchema>;

// ---- Batches ----

export const BATCH_STATUSES = ['queued', 'in_progress', 'completed', 'failed', 'cancelling', 'cancelled', 'expired'] as const;

export const BatchStatusSchema = Type.Union(
  BATCH_STATUSES.map((s) => Type.Literal(s)),
  { description: 'queued -> in_progress -> completed; failed; cancelling -> cancelled; expired (results deleted after retention).' },
);
export type BatchStatus = Static<typeof BatchStatusSchema>;

export const BatchSchema = Type.Object({
  id: Type.String({ description: 'batch_ followed by a ULID.' }),
  object: Type.Literal('batch'),
  model: Type.String({ description: 'The resolved (dated) model id.' }),
  status: BatchStatusSchema,
  progress: Type.Object({
    total: Type.Integer({ description: 'Records in the file (non-blank lines).' }),
    completed: Type.Integer({ description: 'Rows answered.' }),
    failed: Type.Integer({ description: 'Rows that carry an error.' }),
  }),
  created_at: Type.String({ format: 'date-time' }),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null until the batch is final.' }),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, { description: 'Why a failed batch failed.' })),
});
export type Batch = Static<typeof BatchSchema>;

/** A page of batches, each as `item`. */
function batchPage<T extends TSchema>(item: T) {
  return Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    first_id: Type.Union([Type.String(), Type.Null()]),
    last_id: Type.Union([Type.String(), Type.Null()]),
    has_more: Type.Boolean(),
  });
}

/** A page of jobs in our dialect (BatchService.list()). */
export const BatchListSchema = batchPage(BatchSchema);
export type BatchList = Static<typeof BatchListSchema>;

/** A job in the dialect it was created in: ours (the multipart form) or OpenAI's (its JSON body). */
export const WireBatchSchema = Type.Union([BatchSchema, OpenAiBatchSchema]);
export type WireBatch = Static<typeof WireBatchSchema>;

/** GET /v1/batches: the caller's jobs, each in the dialect it was created in. */
export const WireBatchListSchema = batchPage(WireBatchSchema);
export type WireBatchList = Static<typeof WireBatchListSchema>;

// ---- Named in /openapi.json ----

/** The schemas listed under `components.schemas` of /openapi.json, by name. */
export const BatchValidationSchema = Type.Object({
  object: Type.Literal('batch_validation'),
  model: Type.String({ description: 'The resolved (dated) model id the records were checked against.' }),
  records: Type.Integer({ description: 'Records in the file (non-blank lines).' }),
  valid: Type.Integer({ description: 'Records that would be scored.' }),
  invalid: Type.Integer({ description: 'Records that would become failed rows.' }),
  errors: Type.Array(
    Type.Object({
      line: Type.Integer({ description: '1-based line number in the file, blank lines included.' }),
      custom_id: Type.Union([Type.String(), Type.Null()]),
      code: Type.String(),
      message: Type.String(),
    }),
    { description: 'The invalid records in file order, at most 100 (see errors_truncated).' },
  ),
  errors_truncated: Type.Boolean({ description: 'More invalid records than are listed.' }),
});
export type BatchValidation = Static<typeof BatchValidationSchema>;

export const NAMED_SCHEMAS = Object.freeze({
  DecideRequest: DecideRequestSchema,
  DecideResponse: DecideResponseSchema,
  Error: ErrorSchema,
  Model: ModelSchema,
  ModelListing: ModelListingSchema,
  Batch: BatchSchema,
  OpenAiBatch: OpenAiBatchSchema,
  BatchList: WireBatchListSchema,
  BatchValidation: BatchValidationSchema,
});
export type SchemaName = keyof typeof NAMED_SCHEMAS;

/**
 * Fastify shares schema ids with the app around an embedded decisionApp, so ours are namespaced
 * (a host's own `Error` schema must not collide); /openapi.json names them without the prefix.
 */
export const SCHEMA_ID_PREFIX = 'decision-engine.';

/** The fastify `$id` a named schema is registered under. */
export function schemaId(name: SchemaName): string {
  return `${SCHEMA_ID_PREFIX}${name}`;
}

/**
 * A route schema that points at a named schema (registered with fastify under schemaId(name)).
 * @example
 * response: { 200: ref('Batch'), 404: ref('Error', 'not_found') }
 */
export function ref(name: SchemaName, description?: string): { $ref: string; description?: string } {
  const $ref = `${schemaId(name)}#`;
  return description === undefined ? { $ref } : { $ref, description };
}
