import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { parseJsonText } from '../../src/api/json-text.js';
import { parseSystemOne } from '../../src/api/systemone/validate.js';
import { normalizeQuestions, normalizeState, validateDecideRequest } from '../../src/api/validate.js';

const noul = { type: 'noul', instructions: 'Is it urgent?' };
const choice = { type: 'choice', instructions: 'Topic?', criteria: { billing: 'Money', shipping: 'Parcels' } };

function body(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'svc-alpha', state: 'hello', questions: { q1: noul }, ...over };
}

function withQuestion(q: unknown, id = 'q1'): Record<string, unknown> {
  return body({ questions: { [id]: q } });
}

/** Runs validation and returns the ApiError it throws. */
function rejection(input: unknown, limits = {}): ApiError {
  try {
    validateDecideRequest(input, limits);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected validation to fail');
}

function expectInvalid(input: unknown, message: RegExp): void {
  const err = rejection(input);
  expect(err.code).toBe('invalid_question');
  expect(err.status).toBe(400);
  expect(err.message).toMatch(message);
}

function nest(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

describe('validateDecideRequest: the request envelope', () => {
  it('rejects a body that is not an object', () => {
    for (const b of [null, undefined, 'x', 3, [], [body()]]) expectInvalid(b, /^request body: must be a JSON object/);
  });

  it('requires model as a non-empty string', () => {
    expectInvalid(body({ model: undefined }), /^model: required/);
    expectInvalid(body({ model: 7 }), /^model: must be a non-empty string, got number/);
    expectInvalid(body({ model: '' }), /^model: must be a non-empty string, got empty/);
    expectInvalid(body({ model: null }), /^model: .*got null/);
  });

  it('requires state as a string or a plain object', () => {
    expectInvalid(body({ state: undefined }), /^state: required/);
    expectInvalid(body({ state: ['a'] }), /^state: must be a string or a JSON object, got array/);
    expectInvalid(body({ state: 5 }), /^state: .*got number/);
    expectInvalid(body({ state: null }), /^state: .*got null/);
    expectInvalid(body({ state: true }), /^state: .*got boolean/);
  });

  it('requires questions as a non-empty object of at most 64 entries', () => {
    expectInvalid(body({ questions: undefined }), /^questions: required/);
    expectInvalid(body({ questions: [noul] }), /^questions: must be an object .*got array/);
    expectInvalid(body({ questions: 'q' }), /^questions: must be an object .*got string/);
    expectInvalid(body({ questions: {} }), /^questions: must contain at least 1 question/);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`q${i}`, noul]));
    expectInvalid(body({ questions: many }), /^questions: at most 64 questions per request, got 65/);
    delete many.q64;
    expect(validateDecideRequest(body({ questions: many })).questions).toHaveLength(64);
  });

  it('rejects unknown top-level fields, naming them', () => {
    expectInvalid(body({ temperature: 0 }), /^temperature: unknown field \(allowed: model, state, questions, label_mass\)/);
  });

  it('label_mass: an opt-in boolean, carried only when true', () => {
    expect(validateDecideRequest(body({ label_mass: true })).labelMass).toBe(true);
    expect(validateDecideRequest(body({ label_mass: false }))).not.toHaveProperty('labelMass');
    expect(validateDecideRequest(body())).not.toHaveProperty('labelMass');
    expectInvalid(body({ label_mass: 'yes' }), /^label_mass: must be true or false, got string/);
  });

  it('accepts a minimal request and normalizes it', () => {
    const req = validateDecideRequest(body());
    expect(req).toEqual({
      model: 'svc-alpha',
      stateText: 'hello',
      questions: [
        {
          id: 'q1',
          type: 'noul',
          instructions: 'Is it urgent?',
          options: [
            { key: 'no', criteriaIndex: 0 },
            { key: 'yes', criteriaIndex: 1 },
          ],
        },
      ],
    });
  });
});

describe('validateDecideRequest: state', () => {
  it('keeps a string state as is, the empty string included', () => {
    expect(validateDecideRequest(body({ state: '  a\n b ' })).stateText).toBe('  a\n b ');
    expect(validateDecideRequest(body({ state: '' })).stateText).toBe('');
  });

  it('renders an object state as compact JSON in key order', () => {
    const state = { z: 1, a: { list: [1, 'two', null, true], 'ü': 'ß' }, e: {} };
    const req = validateDecideRequest(body({ state }));
    expect(req.stateText).toBe('{"z":1,"a":{"list":[1,"two",null,true],"ü":"ß"},"e":{}}');
    expect(JSON.parse(req.stateText)).toEqual(state);
  });

  it('accepts nesting up to 64 levels and rejects deeper, naming the path', () => {
    expect(() => validateDecideRequest(body({ state: nest(64) }))).not.toThrow();
    expectInvalid(body({ state: nest(65) }), /^state(\["a"\]){64}: state is nested deeper than 64 levels$/);
    const deepArray: unknown[] = [];
    let cur = deepArray;
    for (let i = 0; i < 100_000; i++) {
      const next: unknown[] = [];
      cur.push(next);
      cur = next;
    }
    expectInvalid(body({ state: { deep: deepArray } }), /state is nested deeper than 64 levels/);
  });

  it('respects a configured depth limit', () => {
    const err = rejection(body({ state: { list: [[1]] } }), { maxStateDepth: 2 });
    expect(err.message).toBe('state["list"][0]: state is nested deeper than 2 levels');
  });

  it('rejects cycles and values that are not JSON data', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expectInvalid(body({ state: cyclic }), /deeper than 64 levels/);
    expectInvalid(body({ state: { n: NaN } }), /^state\["n"\]: numbers must be finite, got NaN/);
    expectInvalid(body({ state: { n: [1, Infinity] } }), /^state\["n"\]\[1\]: numbers must be finite/);
    expectInvalid(body({ state: { f: () => 1 } }), /^state\["f"\]: must be JSON data, got function/);
    expectInvalid(body({ state: { b: 10n } }), /^state\["b"\]: must be JSON data, got bigint/);
    expectInvalid(body({ state: { d: new Date(0) } }), /^state\["d"\]: must be JSON data .*got Date/);
    expectInvalid(body({ state: new Map() }), /^state: must be a string or a JSON object, got Map/);
  });

  it('refuses a lone surrogate anywhere a library caller can put one, as the HTTP doors refuse it in the JSON text', () => {
    const lone = /holds a lone surrogate .*not writable as UTF-8$/;
    expectInvalid(body({ state: 'x\ud800' }), new RegExp(`^state: ${lone.source}`));
    expectInvalid(body({ state: { ['k\udc00']: 1 } }), /^state: the key "k\\udc00": holds a lone surrogate/);
    expectInvalid(body({ state: { k: ['a', 'b\ud800'] } }), /^state\["k"\]\[1\]: holds a lone surrogate/);
    expectInvalid(withQuestion(noul, 'q\ud800'), /^questions: question id "q\\ud800": holds a lone surrogate/);
    expectInvalid(withQuestion({ ...noul, instructions: 'Is it\udfff?' }), /^questions\["q1"\]\.instructions: holds a lone surrogate/);
    expectInvalid(withQuestion({ ...choice, criteria: { billing: 'Money', ['ship\ud800']: 'Parcels' } }), /option key "ship\\ud800": holds a lone surrogate/);
    expectInvalid(withQuestion({ ...choice, criteria: { billing: 'Money\ud800', shipping: 'Parcels' } }), /^questions\["q1"\]\.criteria\["billing"\]: holds a lone surrogate/);
    // A pair is text: an emoji anywhere is fine.
    expect(validateDecideRequest(body({ state: { '😀': '😀' }, questions: { '😀': { ...choice, criteria: { '😀': '😀', b: 'x' } } } })).questions[0]!.id).toBe('😀');
  });

  it('bounds the work on huge or self-sharing objects with state_too_long', () => {
    let shared: unknown = 1;
    for (let i = 0; i < 60; i++) shared = [shared, shared]; // 2^60 paths, 61 distinct arrays
    const err = rejection(body({ state: { shared } }));
    expect(err.code).toBe('state_too_long');
    expect(err.status).toBe(413);
    const small = rejection(body({ state: { a: [1, 2, 3] } }), { maxStateValues: 3 });
    expect(small.code).toBe('state_too_long');
    expect(small.message).toMatch(/^state: more than 3 values/);
  });

  it('drops undefined members like JSON.stringify', () => {
    expect(normalizeState({ a: undefined, b: 1 })).toBe('{"b":1}');
  });
});

describe('validateDecideRequest: questions', () => {
  it('requires each question to be an object', () => {
    expectInvalid(withQuestion('is it?'), /^questions\["q1"\]: must be an object, got string/);
    expectInvalid(withQuestion(null), /^questions\["q1"\]: must be an object, got null/);
    expectInvalid(withQuestion([noul]), /^questions\["q1"\]: must be an object, got array/);
  });

  it('checks question id length (1..128 characters) and reserves __proto__', () => {
    expectInvalid(withQuestion(noul, ''), /^questions: question id "" must be 1 to 128 characters/);
    expectInvalid(withQuestion(noul, 'x'.repeat(129)), /^questions: question id "x{60}\.\.\." must be 1 to 128 characters/);
    expect(() => validateDecideRequest(withQuestion(noul, 'x'.repeat(128)))).not.toThrow();
    // 128 characters that are 256 UTF-16 units.
    expect(() => validateDecideRequest(withQuestion(noul, '😀'.repeat(128)))).not.toThrow();
    expectInvalid(withQuestion(noul, '😀'.repeat(129)), /must be 1 to 128 characters/);
    expectInvalid(JSON.parse('{"model":"m","state":"s","questions":{"__proto__":{"type":"noul","instructions":"i"}}}'),
      /^questions: question id "__proto__" is reserved/);
  });

  it('requires type to be noul, choice or score', () => {
    expectInvalid(withQuestion({ instructions: 'i' }), /^questions\["q1"\]\.type: must be one of noul, choice, score, got missing/);
    expectInvalid(withQuestion({ ...noul, type: 'boolean' }), /^questions\["q1"\]\.type: must be one of noul, choice, score, got "boolean"/);
    expectInvalid(withQuestion({ ...noul, type: 3 }), /\.type: .*got number/);
  });

  it('requires non-empty instructions', () => {
    expectInvalid(withQuestion({ type: 'noul' }), /^questions\["q1"\]\.instructions: required, a non-empty string \(got missing\)/);
    expectInvalid(withQuestion({ type: 'noul', instructions: '' }), /\.instructions: required, a non-empty string \(got empty\)/);
    expectInvalid(withQuestion({ type: 'noul', instructions: ' \n\t' }), /\.instructions: .*got empty/);
    expectInvalid(withQuestion({ type: 'noul', instructions: ['x'] }), /\.instructions: .*got array/);
    expectInvalid(withQuestion({ type: 'noul', instructions: 'x'.repeat(4001) }), /\.instructions: longer than 4000 characters/);
  });

  it('rejects unknown question fields, naming them', () => {
    expectInvalid(withQuestion({ ...noul, critera: { no: 'a', yes: 'b' } }),
      /^questions\["q1"\]\.critera: unknown field \(allowed: type, instructions, criteria\)/);
  });

  it('requires criteria for choice and score', () => {
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i' }), /^questions\["q1"\]\.criteria: required for type choice/);
    expectInvalid(withQuestion({ type: 'score', instructions: 'i' }), /^questions\["q1"\]\.criteria: required for type score/);
    expectInvalid(withQuestion({ ...choice, criteria: ['a', 'b'] }), /\.criteria: must be an object .*got array/);
    expectInvalid(withQuestion({ ...choice, criteria: null }), /\.criteria: must be an object .*got null/);
  });

  it('requires 2 to 255 options for choice and score', () => {
    expectInvalid(withQuestion({ ...choice, criteria: { a: 'x' } }), /^questions\["q1"\]\.criteria: must have 2 to 255 options, got 1/);
    expectInvalid(withQuestion({ ...choice, criteria: {} }), /must have 2 to 255 options, got 0/);
    const c255 = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`o${i}`, `option ${i}`]));
    expect(validateDecideRequest(withQuestion({ ...choice, criteria: c255 })).questions[0]!.options).toHaveLength(255);
    expectInvalid(withQuestion({ ...choice, criteria: { ...c255, extra: 'x' } }), /must have 2 to 255 options, got 256/);
    const s256 = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [String(i), 'x']));
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: s256 }), /must have 2 to 255 options, got 256/);
    const s255 = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [String(i), 'x']));
    expect(validateDecideRequest(withQuestion({ type: 'score', instructions: 'i', criteria: s255 })).questions[0]!.options).toHaveLength(255);
  });

  it('requires string descriptions of at most 2000 characters', () => {
    expectInvalid(withQuestion({ ...choice, criteria: { a: 'x', b: 2 } }),
      /^questions\["q1"\]\.criteria\["b"\]: the description must be a string, got number/);
    expectInvalid(withQuestion({ ...choice, criteria: { a: 'x', b: 'y'.repeat(2001) } }),
      /^questions\["q1"\]\.criteria\["b"\]: the description is longer than 2000 characters/);
    expect(() => validateDecideRequest(withQuestion({ ...choice, criteria: { a: '', b: 'y'.repeat(2000) } }))).not.toThrow();
  });

  it('checks option key length and reserves __proto__', () => {
    expectInvalid(withQuestion({ ...choice, criteria: { '': 'x', b: 'y' } }), /^questions\["q1"\]\.criteria: option key "" must be 1 to 128 characters/);
    expectInvalid(withQuestion({ ...choice, criteria: { ['k'.repeat(129)]: 'x', b: 'y' } }), /option key "k{60}\.\.\." must be 1 to 128/);
    const parsed = JSON.parse('{"model":"m","state":"s","questions":{"q":{"type":"choice","instructions":"i","criteria":{"__proto__":"x","b":"y"}}}}');
    expectInvalid(parsed, /^questions\["q"\]\.criteria: option key "__proto__" is reserved/);
  });

  it('noul: criteria optional, but if given the keys are exactly no and yes', () => {
    const withCriteria = validateDecideRequest(withQuestion({ ...noul, criteria: { yes: 'It is', no: 'It is not' } }));
    expect(withCriteria.questions[0]!.options).toEqual([
      { key: 'no', description: 'It is not', criteriaIndex: 0 },
      { key: 'yes', description: 'It is', criteriaIndex: 1 },
    ]);
    expectInvalid(withQuestion({ ...noul, criteria: { no: 'a' } }), /^questions\["q1"\]\.criteria: for type noul the keys must be exactly "no" and "yes" \(got "no"\)/);
    expectInvalid(withQuestion({ ...noul, criteria: { No: 'a', Yes: 'b' } }), /exactly "no" and "yes" \(got "No", "Yes"\)/);
    expectInvalid(withQuestion({ ...noul, criteria: { no: 'a', yes: 'b', maybe: 'c' } }), /exactly "no" and "yes"/);
    expectInvalid(withQuestion({ ...noul, criteria: {} }), /exactly "no" and "yes" \(got none\)/);
    expectInvalid(withQuestion({ ...noul, criteria: { no: 'a', yes: 1 } }), /\.criteria\["yes"\]: the description must be a string/);
  });

  it('choice: options keep criteria order', () => {
    const req = validateDecideRequest(withQuestion({ ...choice, criteria: { zeta: 'z', alpha: 'a', mid: 'm' } }));
    expect(req.questions[0]!.options.map((o) => [o.key, o.criteriaIndex])).toEqual([['zeta', 0], ['alpha', 1], ['mid', 2]]);
  });

  it('score: keys are numeric levels, ordered ascending, criteriaIndex kept', () => {
    const q = { type: 'score', instructions: 'How much?', criteria: { '2.5': 'high', '-1': 'negative', '0': 'none', '10': 'max' } };
    const opts = validateDecideRequest(withQuestion(q)).questions[0]!.options;
    expect(opts.map((o) => o.key)).toEqual(['-1', '0', '2.5', '10']);
    // An object built in JavaScript enumerates integer-like keys first: criteria order is 0, 10, 2.5, -1.
    expect(opts.map((o) => o.criteriaIndex)).toEqual([3, 0, 2, 1]);
    expect(() => validateDecideRequest(withQuestion({ ...q, criteria: { '007': 'a', '1': 'b' } }))).not.toThrow();
  });

  it('JSON text keeps the written order of question ids and criteria, integer-like keys included', () => {
    const parsed = parseJsonText(
      '{"model":"m","state":"s","questions":{"b":{"type":"choice","instructions":"i","criteria":{"2":"x","10":"y","a":"z","0":"w"}},' +
        '"3":{"type":"score","instructions":"i","criteria":{"2.5":"high","-1":"negative","0":"none","10":"max"}}}}',
    );
    if (!parsed.ok) throw new Error(parsed.reason);
    const req = validateDecideRequest(parsed.value);
    expect(req.questions.map((q) => q.id)).toEqual(['b', '3']);
    expect(req.questions[0]!.options.map((o) => [o.key, o.criteriaIndex])).toEqual([['2', 0], ['10', 1], ['a', 2], ['0', 3]]);
    expect(req.questions[1]!.options.map((o) => [o.key, o.criteriaIndex])).toEqual([['-1', 1], ['0', 2], ['2.5', 0], ['10', 3]]);
  });

  it('score: rejects keys that are not plain decimal numbers', () => {
    for (const bad of ['abc', ' 1', '1 ', '1e3', '+1', '.5', '1.', '0x10', 'Infinity', 'NaN', '1,5', '--1', '١']) {
      const err = rejection(withQuestion({ type: 'score', instructions: 'i', criteria: { [bad]: 'x', '5': 'y' } }));
      expect(err.code).toBe('invalid_question');
      expect(err.message.startsWith(`questions["q1"].criteria[${JSON.stringify(bad)}]: score keys must be numeric levels`)).toBe(true);
    }
  });

  it('choice: rejects options the model would read alike (description, else key, on one line), naming both keys', () => {
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i', criteria: { yes: '', 'yes ': '' } }),
      /^questions\["q1"\]\.criteria: options "yes" and "yes " read the same to the model \("yes"/);
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i', criteria: { 'a b': '', 'a\n  b': '', c: '' } }), /options "a b" and "a\\n  b" read the same/);
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i', criteria: { refund: 'Money back', credit: 'Money back ' } }), /options "refund" and "credit" read the same/);
    // The same text once composed: an accent written apart.
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i', criteria: { 'caf\u00e9': '', 'cafe\u0301': '' } }), /read the same to the model/);
    // A description shown in place of a key that another option shows as its own.
    expectInvalid(withQuestion({ type: 'choice', instructions: 'i', criteria: { x: 'Billing', Billing: '' } }), /options "x" and "Billing" read the same/);
    // What reads differently is fine: case, inner spaces, a description beside the same key text.
    for (const criteria of [{ yes: '', Yes: '' }, { 'a b': '', 'a  b': '' }, { a: 'same', b: 'Same' }]) {
      expect(validateDecideRequest(withQuestion({ type: 'choice', instructions: 'i', criteria })).questions[0]!.options).toHaveLength(2);
    }
  });

  it('score: rejects duplicate levels by value', () => {
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: { '1': 'a', '01': 'b' } }),
      /^questions\["q1"\]\.criteria: score levels "1" and "01" have the same value/);
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: { '1.0': 'a', '1': 'b' } }), /have the same value/);
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: { '0': 'a', '-0': 'b' } }), /"0" and "-0" have the same value/);
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: { '-2.50': 'a', '-002.5': 'b' } }), /"-2.50" and "-002.5" have the same value/);
    expectInvalid(withQuestion({ type: 'score', instructions: 'i', criteria: { '0.0': 'a', '-00.000': 'b' } }), /have the same value/);
  });

  it('messages quote a long key cut between characters, never inside an emoji', () => {
    const key = `a${'🙂'.repeat(129)}`;
    const err = rejection(withQuestion({ type: 'choice', instructions: 'i', criteria: { [key]: 'x', b: 'y' } }));
    expect(err.message).toContain(`"a${'🙂'.repeat(29)}..."`);
    expect((err.message as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
    const parsed = parseSystemOne({ model: 'm', state: 's', questions: { [key]: { type: 'rank', instructions: 'x' } } });
    expect(!parsed.ok && JSON.stringify(parsed.error.body)).not.toMatch(/\\ud83d/);
  });

  it('score: compares levels as exact decimals, past what a double holds', () => {
    const order = (keys: string[]) =>
      validateDecideRequest(body({ questions: { q1: { type: 'score', instructions: 'i', criteria: Object.fromEntries(keys.map((k) => [k, k])) } } })).questions[0]!.options.map((o) => o.key);
    expect(order(['99999999999999999999', '99999999999999999998'])).toEqual(['99999999999999999998', '99999999999999999999']);
    expect(order(['0.1000000000000000000001', '0.1'])).toEqual(['0.1', '0.1000000000000000000001']);
    expect(order(['10', '-1', '9.99', '-1.5', '0', '-10', '100', '0.05', '-0.5'])).toEqual(['-10', '-1.5', '-1', '-0.5', '0', '0.05', '9.99', '10', '100']);
    expect(order(['007', '6.9999', '-0.0001'])).toEqual(['-0.0001', '6.9999', '007']);
  });

  it('keeps the caller order of question ids and reports the first bad question', () => {
    const req = validateDecideRequest(body({ questions: { b: noul, a: choice } }));
    expect(req.questions.map((q) => q.id)).toEqual(['b', 'a']);
    expectInvalid(body({ questions: { ok: noul, bad: { type: 'x', instructions: 'i' } } }), /^questions\["bad"\]\.type/);
  });

  it('is usable on its own for batch records', () => {
    expect(normalizeQuestions({ q: noul })[0]!.id).toBe('q');
    expect(() => normalizeQuestions({})).toThrow(/^questions: must contain at least 1 question/);
  });
});
