/**
 * The published DecideRequest schema and validateDecideRequest() are one contract: a JSON Schema
 * validator (fastify's ajv, told not to drop unknown fields or coerce types) run on the schema
 * that /openapi.json publishes accepts and rejects the same requests as validateDecideRequest(),
 * except for the rules JSON Schema cannot say, which only the validator enforces (listed below).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import { DecideRequestSchema } from '../../src/api/schemas.js';
import { validateDecideRequest } from '../../src/api/validate.js';

const base = {
  model: 'svc-alpha',
  state: 'The parcel arrived broken.',
  questions: { refund: { type: 'noul', instructions: 'Refund?' } },
};
const question = (q: Record<string, unknown>) => ({ ...base, questions: { q: { type: 'choice', instructions: 'Which?', ...q } } });
const options = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`o${i}`, `option ${i}`]));
const manyQuestions = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`q${i}`, { type: 'noul', instructions: 'x' }]));

/** Requests both must accept. */
const ACCEPTED: Record<string, unknown> = {
  'a noul question': base,
  'an object state and label_mass': { ...base, state: { a: [1, { b: null }] }, label_mass: true },
  'an empty string state': { ...base, state: '' },
  'choice with 26 options': question({ criteria: options(26) }),
  'choice with 255 options': question({ criteria: options(255) }),
  'score levels': question({ type: 'score', criteria: { '0': 'low', '2.5': 'high' } }),
  '64 questions': { ...base, questions: manyQuestions(64) },
  'a 128-character id of astral characters (code points)': { ...base, questions: { ['😀'.repeat(128)]: { type: 'noul', instructions: 'x' } } },
  'a 2000-character description': question({ criteria: { a: 'd'.repeat(2000), b: '' } }),
  '4000-character instructions': question({ instructions: 'i'.repeat(4000), criteria: options(2) }),
};

/** Requests both must reject (each breaks one rule the schema states). */
const REJECTED: Record<string, unknown> = {
  'not an object': [base],
  'model missing': { state: base.state, questions: base.questions },
  'model empty': { ...base, model: '' },
  'model not a string': { ...base, model: 7 },
  'state missing': { model: base.model, questions: base.questions },
  'state an array': { ...base, state: ['x'] },
  'state a number': { ...base, state: 3 },
  'questions missing': { model: base.model, state: base.state },
  'no questions': { ...base, questions: {} },
  '65 questions': { ...base, questions: manyQuestions(65) },
  'a 129-character question id': { ...base, questions: { ['q'.repeat(129)]: { type: 'noul', instructions: 'x' } } },
  'an empty question id': { ...base, questions: { '': { type: 'noul', instructions: 'x' } } },
  'a question that is not an object': { ...base, questions: { q: 'noul' } },
  'an unknown question field': { ...base, questions: { q: { type: 'noul', instructions: 'x', critera: {} } } },
  'an unknown type': { ...base, questions: { q: { type: 'maybe', instructions: 'x' } } },
  'type missing': { ...base, questions: { q: { instructions: 'x' } } },
  'instructions missing': { ...base, questions: { q: { type: 'noul' } } },
  'empty instructions': { ...base, questions: { q: { type: 'noul', instructions: '' } } },
  '4001-character instructions': question({ instructions: 'i'.repeat(4001), criteria: options(2) }),
  'criteria not an object': question({ criteria: ['a', 'b'] }),
  'one option': question({ criteria: options(1) }),
  '256 options': question({ criteria: options(256) }),
  'a 129-character option key': question({ criteria: { ['k'.repeat(129)]: 'x', b: 'y' } }),
  'a description that is not a string': question({ criteria: { a: 1, b: 'y' } }),
  'a 2001-character description': question({ criteria: { a: 'd'.repeat(2001), b: '' } }),
  'label_mass not a boolean': { ...base, label_mass: 'yes' },
  'an unknown top-level field': { ...base, temperature: 0 },
};

/** What only validateDecideRequest() enforces: JSON Schema accepts these, the validator does not. */
const VALIDATOR_ONLY: Record<string, unknown> = {
  'whitespace-only instructions': { ...base, questions: { q: { type: 'noul', instructions: '  ' } } },
  'choice without criteria': { ...base, questions: { q: { type: 'choice', instructions: 'x' } } },
  'noul criteria other than no and yes': { ...base, questions: { q: { type: 'noul', instructions: 'x', criteria: { y: 'a', n: 'b' } } } },
  'a score level that is not a number': question({ type: 'score', criteria: { low: 'a', high: 'b' } }),
  'two score levels of one value': question({ type: 'score', criteria: { '1': 'a', '1.0': 'b' } }),
  'a state nested deeper than 64 levels': { ...base, state: JSON.parse(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`) },
};

let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify({ ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } } });
  app.post('/decide', { schema: { body: DecideRequestSchema } }, async () => ({ ok: true }));
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

async function schemaAccepts(body: unknown): Promise<boolean> {
  const res = await app.inject({ method: 'POST', url: '/decide', payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  expect([200, 400]).toContain(res.statusCode);
  return res.statusCode === 200;
}

function validatorAccepts(body: unknown): boolean {
  try {
    validateDecideRequest(body);
    return true;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('invalid_question');
    return false;
  }
}

describe('the DecideRequest schema and validateDecideRequest() agree', () => {
  it.each(Object.entries(ACCEPTED))('both accept: %s', async (_, body) => {
    expect(validatorAccepts(body)).toBe(true);
    expect(await schemaAccepts(body)).toBe(true);
  });

  it.each(Object.entries(REJECTED))('both reject: %s', async (_, body) => {
    expect(validatorAccepts(body)).toBe(false);
    expect(await schemaAccepts(body)).toBe(false);
  });

  it.each(Object.entries(VALIDATOR_ONLY))('only the validator rejects (not a JSON Schema rule): %s', async (_, body) => {
    expect(validatorAccepts(body)).toBe(false);
    expect(await schemaAccepts(body)).toBe(true);
  });
});
