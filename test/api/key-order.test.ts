/**
 * Integer-like keys ("0", "10", "2") keep the order the client wrote them in, through every door
 * over real HTTP on the tiny model: criteria (the options the model reads, in that order), score
 * levels and question ids, in /v1/decide, /v1/systemone, /v1/decisions (an array: its order is
 * never in doubt) and batch lines of both formats, and in the responses' JSON text. The same
 * question gets the same probabilities through every door (1e-6). JavaScript would list "0", "1",
 * "2", "10" before any other key; a client from Python (which keeps insertion order) writes them
 * as it likes. `__proto__`-like keys ("constructor", "toString") are ordinary keys; "__proto__"
 * itself is refused by name where it would be a key, and is an ordinary choice value in an array.
 */
import type { FastifyInstance } from 'fastify';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJsonText } from '../../src/api/json-text.js';
import { giveWrittenForms, jsonInOrder, keysInOrder, writtenFormsOf } from '../../src/domain/key-order.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

const MODEL = 'svc-alpha-2026-10';
const TOLERANCE = 1e-6 + 1e-12;
const STATE = 'My card was charged twice for order 1182 and the parcel is late.';

/** A choice's options as written: integer-like keys out of JavaScript's order, and mixed ones. */
const CHOICES: Record<string, Array<[string, string]>> = {
  integers: [['0', 'refund'], ['1', 'delivery'], ['10', 'invoice'], ['2', 'other']],
  mixed: [['b', 'billing'], ['7', 'seven'], ['a', 'account'], ['3', 'three']],
  protoLike: [['constructor', 'build'], ['toString', 'text'], ['12', 'twelve'], ['hasOwnProperty', 'own']],
};
/** Question ids in written order (integer-like ones after others). */
const IDS = ['zeta', '10', '2', 'integers', 'mixed', 'protoLike'];

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  dirs = await tempModels([MODEL]);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  url = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

/** A JSON object's text with its members in exactly this order (JSON.stringify would reorder them). */
function objectText(entries: Array<[string, string]>): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

function criteriaText(choices: Array<[string, string]>, nullDescriptions = false): string {
  return objectText(choices.map(([k, d]) => [k, nullDescriptions ? 'null' : JSON.stringify(d)]));
}

/** The question texts of /v1/decide, by id, in IDS order. */
function decideQuestions(): Array<[string, string]> {
  return IDS.map((id): [string, string] => {
    if (id === 'zeta') return [id, '{"type":"noul","instructions":"Is the customer upset?"}'];
    if (id === '10') return [id, `{"type":"score","instructions":"How urgent?","criteria":${criteriaText([['2', 'now'], ['10', 'later'], ['0', 'never'], ['-1', 'not at all']])}}`];
    if (id === '2') return [id, '{"type":"noul","instructions":"Is it about money?"}'];
    return [id, `{"type":"choice","instructions":"What is it about?","criteria":${criteriaText(CHOICES[id]!)}}`];
  });
}

const decideText = () => `{"model":"svc-alpha","state":${JSON.stringify(STATE)},"questions":${objectText(decideQuestions())}}`;

/** The choice questions as System One writes them (null: the model reads the key; here descriptions are given). */
const systemOneText = () =>
  `{"model":"svc-alpha","state":${JSON.stringify(STATE)},"questions":${objectText(
    IDS.filter((id) => Object.hasOwn(CHOICES, id)).map((id) => [id, `{"type":"choice","instructions":"What is it about?","criteria":${criteriaText(CHOICES[id]!)}}`]),
  )}}`;

const decisionsBody = () => ({
  model: 'svc-alpha',
  input: STATE,
  questions: IDS.filter((id) => Object.hasOwn(CHOICES, id)).map((id) => ({
    type: 'choice',
    name: id,
    instructions: 'What is it about?',
    choices: CHOICES[id]!.map(([value, description]) => ({ value, description })),
  })),
});

async function postText(path: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
  return { status: res.status, text: await res.text() };
}

/** A parsed JSON text whose objects remember their written key order. */
function parse(text: string): any {
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}

/** Probabilities by option key, in the order the response text lists them. */
const ordered = (probs: Record<string, number>) => keysInOrder(probs).map((k) => [k, probs[k]!] as const);

describe('integer-like keys keep the written order', () => {
  it('jsonInOrder writes what JSON.stringify writes, with parsed objects in written order', () => {
    const text = '{"b":[{"2":1,"1":{"z":null,"0":true}},"x"],"10":-0,"a":"\\u0041","0":1.5e-7}';
    const value = parse(text);
    expect(Object.keys(value)).toEqual(['0', '10', 'b', 'a']); // what JavaScript makes of it
    expect(keysInOrder(value)).toEqual(['b', '10', 'a', '0']);
    // Numbers as written ("-0" stays; JSON.stringify would write 0).
    expect(jsonInOrder(value)).toBe('{"b":[{"2":1,"1":{"z":null,"0":true}},"x"],"10":-0,"a":"A","0":1.5e-7}');
    const plain = { a: 1, 2: [undefined, () => 1], u: undefined, d: new Date(0), n: { toJSON: () => 'j' } };
    expect(jsonInOrder(plain)).toBe(JSON.stringify(plain));
    expect(jsonInOrder({ ...plain, e: [], o: {} }, 2)).toBe(JSON.stringify({ ...plain, e: [], o: {} }, null, 2));
    expect(jsonInOrder(value, 2)).toBe('{\n  "b": [\n    {\n      "2": 1,\n      "1": {\n        "z": null,\n        "0": true\n      }\n    },\n    "x"\n  ],\n  "10": -0,\n  "a": "A",\n  "0": 1.5e-7\n}');
    expect(parse('{"__proto__":{"0":1},"1":2}').__proto__).toEqual({ 0: 1 });
    expect(jsonInOrder(parse('{"__proto__":{"5":1,"4":2},"1":2}'))).toBe('{"__proto__":{"5":1,"4":2},"1":2}');
  });

  it('a copy made by structuredClone (a worker thread\'s message) gets the written forms back with giveWrittenForms', () => {
    const value = parse('{"b":[{"2":1,"1":{"z":null,"0":1.0}},"x"],"10":-0,"m":{"3":12345678901234567890,"1":2}}');
    const shared = parse('{"9":1,"8":2}');
    const root = { value, legends: new Map([['q', [shared, shared]]]) };
    const copy = structuredClone(root);
    expect(jsonInOrder(copy.value)).toBe('{"10":0,"b":[{"1":{"0":1,"z":null},"2":1},"x"],"m":{"1":2,"3":12345678901234567000}}');
    giveWrittenForms(copy, writtenFormsOf(root));
    expect(jsonInOrder(copy)).toBe(jsonInOrder(root));
    expect(jsonInOrder(copy.value)).toBe('{"b":[{"2":1,"1":{"z":null,"0":1.0}},"x"],"10":-0,"m":{"3":12345678901234567890,"1":2}}');
    expect(jsonInOrder([...copy.legends.values()])).toBe('[[{"9":1,"8":2},{"9":1,"8":2}]]');
  });

  it('/v1/decide: options reach the model and the answers come back in written order', async () => {
    const res = await postText('/v1/decide', decideText());
    expect(res.status, res.text).toBe(200);
    const body = parse(res.text);
    expect(keysInOrder(body.answers)).toEqual(IDS);
    for (const id of Object.keys(CHOICES)) expect(keysInOrder(body.answers[id].probs)).toEqual(CHOICES[id]!.map(([k]) => k));
    // Score levels: ascending by value whatever order they were written in.
    expect(keysInOrder(body.answers['10'].probs)).toEqual(['-1', '0', '2', '10']);
  });

  it('the library given the JSON text answers as /v1/decide does; given JSON.parse\'s object, in JavaScript\'s order', async () => {
    const http = parse((await postText('/v1/decide', decideText())).text);
    const fromText = await service.decide(decideText());
    expect(keysInOrder(fromText.answers)).toEqual(IDS);
    for (const id of Object.keys(CHOICES)) {
      expect(ordered(fromText.answers[id]!.probs).map(([k]) => k)).toEqual(CHOICES[id]!.map(([k]) => k));
      for (const [k, p] of ordered(http.answers[id].probs)) expect(Math.abs(fromText.answers[id]!.probs[k]! - p)).toBeLessThanOrEqual(TOLERANCE);
    }
    // JSON.parse lists "10" before "2" and both before "zeta": the object's order is what it asks.
    const fromObject = await service.decide(JSON.parse(decideText()));
    expect(Object.keys(fromObject.answers)).toEqual(['2', '10', 'zeta', 'integers', 'mixed', 'protoLike']);
    expect(Object.keys(fromObject.answers.mixed!.probs)).toEqual(['3', '7', 'b', 'a']);
    // Text that is not JSON is the HTTP door's 400, without the text.
    await expect(service.decide('{"model": "svc-alpha", "state": "secret", ')).rejects.toMatchObject({ code: 'invalid_question', status: 400, message: expect.not.stringContaining('secret') });
    await expect(service.decide('{"model":"a","model":"b"}')).rejects.toMatchObject({ code: 'invalid_question', message: expect.stringContaining('duplicate key "model"') });
  });

  it('the same choices through /v1/decide, /v1/systemone and /v1/decisions get the same probabilities in the same order', async () => {
    const decide = parse((await postText('/v1/decide', decideText())).text);
    const systemOneRes = await postText('/v1/systemone', systemOneText());
    expect(systemOneRes.status, systemOneRes.text).toBe(200);
    const systemOne = parse(systemOneRes.text);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 });
    const decisions = await (client as any).decisions.create(decisionsBody());

    const choiceIds = IDS.filter((id) => Object.hasOwn(CHOICES, id));
    expect(keysInOrder(systemOne.answers)).toEqual(choiceIds);
    choiceIds.forEach((id, q) => {
      const fromDecide = ordered(decide.answers[id].probs);
      const fromSystemOne = ordered(systemOne.answers[id].probabilities);
      const fromDecisions = (decisions.answers[q].probabilities as Array<{ value: string; probability: number }>).map((p) => [p.value, p.probability] as const);
      expect(fromDecide.map(([k]) => k)).toEqual(CHOICES[id]!.map(([k]) => k));
      expect(fromSystemOne.map(([k]) => k)).toEqual(CHOICES[id]!.map(([k]) => k));
      expect(fromDecisions.map(([k]) => k)).toEqual(CHOICES[id]!.map(([k]) => k));
      fromDecide.forEach(([, p], i) => {
        expect(Math.abs(p - fromSystemOne[i]![1]), `${id} option ${i}`).toBeLessThanOrEqual(TOLERANCE);
        expect(Math.abs(p - fromDecisions[i]![1]), `${id} option ${i}`).toBeLessThanOrEqual(TOLERANCE);
      });
      expect(systemOne.answers[id].choice).toBe(decide.answers[id].top);
      expect(decisions.answers[q].choice).toBe(decide.answers[id].top);
    });
  });

  it('an object state keeps its written key order in the text the model reads', async () => {
    const state = '{"2":"second","1":"first","note":"charged twice"}';
    const asWritten = await postText('/v1/decide', `{"model":"svc-alpha","state":${state},"questions":{"q":{"type":"noul","instructions":"Charged twice?"}}}`);
    const asString = await postText('/v1/decide', `{"model":"svc-alpha","state":${JSON.stringify(state)},"questions":{"q":{"type":"noul","instructions":"Charged twice?"}}}`);
    expect(parse(asWritten.text).answers.q.probs).toEqual(parse(asString.text).answers.q.probs);
    expect(parse(asWritten.text).usage.input_tokens).toBe(parse(asString.text).usage.input_tokens);
  });

  it('an object state keeps its numbers as written: 20-digit ids, 1.0, 1e2 and -0 reach the model as the client sent them', async () => {
    const numbers = '{"acct":12345678901234567890,"total":1.0,"list":[1e2,-0,0.5,-12.50],"plain":42}';
    const decideWith = (state: string) => postText('/v1/decide', `{"model":"svc-alpha","state":${state},"questions":{"q":{"type":"noul","instructions":"Is the account overdrawn?"}}}`);
    const asWritten = parse((await decideWith(numbers)).text);
    const asString = parse((await decideWith(JSON.stringify(numbers))).text);
    expect(asWritten.answers.q.probs).toEqual(asString.answers.q.probs);
    expect(asWritten.usage.input_tokens).toBe(asString.usage.input_tokens);
    // What a double would have made of it is another text.
    const rounded = parse((await decideWith(JSON.stringify(JSON.stringify(JSON.parse(numbers))))).text);
    expect(rounded.usage.input_tokens).not.toBe(asWritten.usage.input_tokens);
    // A value changed after parsing is written as it now is, not as it was sent.
    const value = parse(`{"a":1.0,"b":[2.50]}`);
    expect(jsonInOrder(value)).toBe('{"a":1.0,"b":[2.50]}');
    value.a = 3;
    value.b[0] = 2.25;
    expect(jsonInOrder(value)).toBe('{"a":3,"b":[2.25]}');
  });

  it('a number beyond a double (1e400) reaches the model as written, as 1e-400 does; a library value Infinity is refused', async () => {
    const decideWith = (state: string) => postText('/v1/decide', `{"model":"svc-alpha","state":${state},"questions":{"q":{"type":"noul","instructions":"Is it big?"}}}`);
    for (const number of ['1e400', '-1e400', '1e-400']) {
      const asWritten = await decideWith(`{"big":${number}}`);
      expect(asWritten.status, number).toBe(200);
      const asString = parse((await decideWith(JSON.stringify(`{"big":${number}}`))).text);
      expect(parse(asWritten.text).answers.q.probs).toEqual(asString.answers.q.probs);
      expect(parse(asWritten.text).usage.input_tokens).toBe(asString.usage.input_tokens);
    }
    await expect(service.decide({ model: 'svc-alpha', state: { big: Infinity }, questions: { q: { type: 'noul', instructions: 'Big?' } } })).rejects.toMatchObject({
      code: 'invalid_question',
      message: 'state["big"]: numbers must be finite, got Infinity',
    });
  });

  it('"__proto__" as a key is refused by name in /v1/decide and /v1/systemone; as a choice value it is a choice', async () => {
    const criteria = '{"__proto__":"odd","a":"plain"}';
    const decide = await postText('/v1/decide', `{"model":"svc-alpha","state":"x","questions":{"q":{"type":"choice","instructions":"?","criteria":${criteria}}}}`);
    expect(decide.status).toBe(400);
    expect(parse(decide.text).message).toContain('"__proto__" is reserved');
    const systemOne = await postText('/v1/systemone', `{"model":"svc-alpha","state":"x","questions":{"q":{"type":"choice","instructions":"?","criteria":${criteria}}}}`);
    expect(systemOne.status).toBe(400);
    expect(JSON.stringify(parse(systemOne.text).detail)).toContain('__proto__');
    const decisions = await postText('/v1/decisions', JSON.stringify({ model: 'svc-alpha', input: 'x', questions: [{ type: 'choice', instructions: '?', choices: [{ value: '__proto__' }, { value: 'a' }] }] }));
    expect(decisions.status, decisions.text).toBe(200);
    expect(parse(decisions.text).answers[0].probabilities.map((p: { value: string }) => p.value)).toEqual(['__proto__', 'a']);
  });

  it('batch lines of ours (own questions and the form field) answer as /v1/decide does, in written order', async () => {
    const sync = parse((await postText('/v1/decide', decideText())).text);
    const questions = objectText(decideQuestions());
    const lines = [`{"custom_id":"own","state":${JSON.stringify(STATE)},"questions":${questions}}`, `{"custom_id":"form","state":${JSON.stringify(STATE)}}`];
    const form = new FormData();
    form.append('model', 'svc-alpha');
    form.append('questions', questions);
    form.append('file', new Blob([`${lines.join('\n')}\n`]), 'lines.jsonl');
    const created = await fetch(`${url}/v1/batches`, { method: 'POST', headers: AUTH, body: form });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await expect.poll(async () => ((await (await fetch(`${url}/v1/batches/${id}`, { headers: AUTH })).json()) as { status: string }).status, { timeout: 60_000 }).toBe('completed');
    const rows = (await (await fetch(`${url}/v1/batches/${id}/results`, { headers: AUTH })).text()).trim().split('\n').map(parse);
    expect(rows.map((r) => r.custom_id)).toEqual(['own', 'form']);
    for (const row of rows) {
      expect(keysInOrder(row.answers)).toEqual(IDS);
      for (const qid of IDS) {
        const got = ordered(row.answers[qid].probs);
        const want = ordered(sync.answers[qid].probs);
        expect(got.map(([k]) => k)).toEqual(want.map(([k]) => k));
        got.forEach(([, p], i) => expect(Math.abs(p - want[i]![1])).toBeLessThanOrEqual(TOLERANCE));
      }
    }
  });

  it('OpenAI batch lines for all three endpoints answer as /v1/decide does, in written order', async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0 });
    const sync = parse((await postText('/v1/decide', decideText())).text);
    const choiceIds = IDS.filter((id) => Object.hasOwn(CHOICES, id));
    /** Each endpoint's answers as [question id, [option key, probability] in written order]. */
    const read: Record<string, (body: any) => Array<[string, ReadonlyArray<readonly [string, number]>]>> = {
      '/v1/decide': (body) => keysInOrder(body.answers).map((id) => [id, ordered(body.answers[id].probs)]),
      '/v1/systemone': (body) => keysInOrder(body.answers).map((id) => [id, ordered(body.answers[id].probabilities)]),
      '/v1/decisions': (body) =>
        body.answers.map((a: any) => [a.name, a.probabilities.map((p: { value: string; probability: number }) => [p.value, p.probability] as const)]),
    };
    for (const [endpoint, body, ids] of [
      ['/v1/decide', decideText(), IDS],
      ['/v1/systemone', systemOneText(), choiceIds],
      ['/v1/decisions', JSON.stringify(decisionsBody()), choiceIds],
    ] as const) {
      const line = `{"custom_id":"c1","method":"POST","url":"${endpoint}","body":${body}}\n`;
      const file = await client.files.create({ file: await toFile(Buffer.from(line), 'lines.jsonl'), purpose: 'batch' });
      const batch = await client.batches.create({ input_file_id: file.id, endpoint: endpoint as never, completion_window: '24h' });
      let done = batch;
      await expect.poll(async () => (done = await client.batches.retrieve(batch.id)).status, { timeout: 60_000 }).toBe('completed');
      const row = parse((await (await client.files.content(done.output_file_id!)).text()).trim());
      expect(row.response.status_code).toBe(200);
      const answers = read[endpoint]!(row.response.body);
      expect(answers.map(([id]) => id), endpoint).toEqual(ids);
      for (const [id, got] of answers) {
        if (Object.hasOwn(CHOICES, id)) expect(got.map(([k]) => k), `${endpoint} ${id}`).toEqual(CHOICES[id]!.map(([k]) => k));
        const want = ordered(sync.answers[id].probs);
        expect(got.map(([k]) => k)).toEqual(want.map(([k]) => k));
        got.forEach(([, p], i) => expect(Math.abs(p - want[i]![1]), `${endpoint} ${id} option ${i}`).toBeLessThanOrEqual(TOLERANCE));
      }
    }
  });
});
