/**
 * OpenAI's Files + Batch flow, driven by the official `openai` SDK over real HTTP against spawned
 * `decide serve` processes on the tiny model, with nothing changed but the base URL and the key:
 * files.create -> batches.create -> batches.retrieve until done -> files.content of the output and
 * error files, for each endpoint a line may call (/v1/decide, /v1/systemone, /v1/decisions). Every
 * output body is compared with what the synchronous endpoint answers for the same body; every
 * custom_id is in exactly one of the two files. Also: `for await` over batches.list() and
 * files.list() across pages, a second key that sees nothing of the first's, cancel of a large job,
 * creation errors (purpose, size, duplicate custom_ids with their lines, url, metadata,
 * output_expires_after) as the SDK's typed errors, a SIGKILL of the server mid-job after which the flow finishes with every line once
 * (the kill is made deterministic as in crash.test.ts: it is sent while the test holds the
 * server's SQLite write lock, so the job cannot finish first), and the flow on Postgres with the
 * file uploaded on one API host, the batch created on another and run by a `decide worker`.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';

import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { BatchDbProbe } from './batch-db-probe.js';
import { QUESTIONS, startServer, startWorker, tempWorkspace, type ServerProcess } from './helpers.js';

/** Probabilities are rounded to 6 decimals: one rounding step is the most two batch layouts may differ by. */
const TOLERANCE = 1e-6 + 1e-12;
const CHUNK_RECORDS = 8;
const KEY_A = 'key-a';
const KEY_B = 'key-b';

type Endpoint = '/v1/decide' | '/v1/systemone' | '/v1/decisions';

const STATES = ['my parcel is late', 'I was charged twice, refund please', 'hello there', 'the invoice is wrong', 'broken on arrival', 'where is my order'];

/** A good body and a body the endpoint refuses, per endpoint, and the shape of its error body. */
const BODIES: Record<Endpoint, { good(state: string): unknown; bad: unknown; errorShape(body: any): void }> = {
  '/v1/decide': {
    good: (state) => ({ model: 'svc-alpha', state, questions: QUESTIONS }),
    bad: { model: 'svc-alpha', state: 'x', questions: { q: { type: 'bogus', instructions: '?' } } },
    errorShape: (body) => expect(body).toMatchObject({ code: 'invalid_question', message: expect.any(String) }),
  },
  '/v1/systemone': {
    good: (state) => ({
      model: 'svc-alpha',
      state,
      questions: {
        refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
        topic: { type: 'choice', instructions: 'What is it about?', criteria: { shipping: 'Delivery', billing: 'Charges', other: null } },
      },
    }),
    bad: { model: 'svc-alpha', state: 'x', questions: {} },
    errorShape: (body) => expect(body).toHaveProperty('detail'),
  },
  '/v1/decisions': {
    good: (state) => ({
      model: 'svc-alpha',
      input: state,
      questions: [
        { type: 'predicate', name: 'refund', instructions: 'Does the customer ask for a refund?' },
        { type: 'choice', name: 'topic', instructions: 'What is it about?', choices: [{ value: 'shipping' }, { value: 'billing' }] },
      ],
    }),
    bad: { model: 'svc-alpha', input: 'x', questions: [] },
    errorShape: (body) => expect(body.error).toMatchObject({ type: 'invalid_request_error', message: expect.any(String) }),
  },
};

interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: any } | null;
  error: { code: string; message: string } | null;
}

function jsonl(lines: unknown[]): Buffer {
  return Buffer.from(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
}

function parseLines(text: string): OutputLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as OutputLine);
}

/** Lines for `endpoint`: good ones with custom ids `<prefix>-<i>`, and the refused body at `badAt`. */
function requestLines(endpoint: Endpoint, n: number, prefix: string, badAt?: number): Array<{ custom_id: string; method: string; url: string; body: unknown }> {
  return Array.from({ length: n }, (_, i) => ({
    custom_id: `${prefix}-${i}`,
    method: 'POST',
    url: endpoint,
    body: i === badAt ? BODIES[endpoint].bad : BODIES[endpoint].good(`#${i} ${STATES[i % STATES.length]}`),
  }));
}

/** Deep equality with numbers within TOLERANCE; ids, request ids and cache counters are per call. */
function expectSameBody(got: unknown, want: unknown, where = 'body'): void {
  if (typeof want === 'number') {
    expect(typeof got, where).toBe('number');
    expect(Math.abs((got as number) - want), where).toBeLessThanOrEqual(TOLERANCE);
    return;
  }
  if (typeof want !== 'object' || want === null) {
    expect(got, where).toEqual(want);
    return;
  }
  expect(typeof got, where).toBe('object');
  const skip = ['id', 'request_id', 'cached_tokens', 'cache_write_tokens'];
  const keys = (o: object) => Object.keys(o).filter((k) => !skip.includes(k)).sort();
  expect(keys(got as object), where).toEqual(keys(want));
  for (const k of keys(want)) expectSameBody((got as any)[k], (want as any)[k], `${where}.${k}`);
}

async function live(url: string, endpoint: Endpoint, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${endpoint}`, { method: 'POST', headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

const sdk = (server: { url: string }, key: string) => new OpenAI({ apiKey: key, baseURL: `${server.url}/v1`, maxRetries: 0 });

async function upload(client: OpenAI, bytes: Buffer, name = 'requests.jsonl') {
  return client.files.create({ file: await toFile(bytes, name), purpose: 'batch' });
}

async function untilDone(client: OpenAI, id: string, timeoutMs = 120_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (['completed', 'failed', 'cancelled', 'expired'].includes(batch.status)) return batch;
    if (Date.now() > end) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function content(client: OpenAI, fileId: string | null | undefined): Promise<OutputLine[]> {
  if (!fileId) return [];
  return parseLines(await (await client.files.content(fileId)).text());
}

/**
 * A batch's `usage` must be the sum over its output lines, each counted as the synchronous endpoint
 * counts it: the bodies' input tokens, one output token per answered question, and (where the body
 * says, /v1/decide and /v1/decisions) their cached tokens.
 */
function expectUsageOfLines(usage: any, output: OutputLine[]): void {
  const bodies = output.map((l) => l.response!.body);
  const input = bodies.reduce((n, b) => n + b.usage.input_tokens, 0);
  const answers = bodies.reduce((n, b) => n + (Array.isArray(b.answers) ? b.answers.length : Object.keys(b.answers).length), 0);
  expect(input).toBeGreaterThan(0);
  expect(usage).toMatchObject({ input_tokens: input, output_tokens: answers, total_tokens: input + answers, output_tokens_details: { reasoning_tokens: 0 } });
  const cached = bodies.map((b) => b.usage.input_tokens_details?.cached_tokens ?? b.usage.cached_tokens);
  if (cached.every((c) => typeof c === 'number')) expect(usage.input_tokens_details.cached_tokens).toBe(cached.reduce((n, c) => n + c, 0));
  else expect(usage.input_tokens_details.cached_tokens).toBeLessThanOrEqual(input);
}

/** Every custom_id of `ids` exactly once across the two files. */
function expectEachOnce(output: OutputLine[], errors: OutputLine[], ids: string[]): void {
  const seen = [...output, ...errors].map((l) => l.custom_id).sort();
  expect(seen).toEqual([...ids].sort());
}

let workDir: string;
let modelsDir: string;
let server: ServerProcess;
let dataDir: string;
const MAX_RECORDS = 1000;
const env = { DECIDE_API_KEYS: `${KEY_A},${KEY_B}`, DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS), DECIDE_BATCH_CONCURRENCY: '1', DECIDE_BATCH_MAX_RECORDS: String(MAX_RECORDS) };

beforeAll(async () => {
  await decideBin();
  ({ dir: workDir, modelsDir } = await tempWorkspace('openai-batch'));
  dataDir = path.join(workDir, 'data');
  server = await startServer({ dataDir, modelsDir, env, args: ['--threads', '1'] });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await rm(workDir, { recursive: true, force: true });
});

describe('the openai SDK against decide serve (SQLite store)', () => {
  const created: string[] = [];

  for (const endpoint of Object.keys(BODIES) as Endpoint[]) {
    it(`runs a batch of ${endpoint} lines: output bodies are the synchronous answers, the refused line is in the error file`, async () => {
      const client = sdk(server, KEY_A);
      const lines = requestLines(endpoint, 10, endpoint.slice(4), 3);
      // A line naming another model: one job runs one model (the first line's).
      lines.push({ custom_id: 'other-model', method: 'POST', url: endpoint, body: { ...(BODIES[endpoint].good('x') as object), model: 'svc-beta' } });
      const file = await upload(client, jsonl(lines));
      expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'requests.jsonl', bytes: jsonl(lines).length, status: 'processed' });
      expect(Buffer.from(await (await client.files.content(file.id)).arrayBuffer()).equals(jsonl(lines))).toBe(true);

      const batch = await client.batches.create({ input_file_id: file.id, endpoint: endpoint as any, completion_window: '24h', metadata: { suite: 'openai-batch' } });
      created.push(batch.id);
      expect(batch).toMatchObject({ object: 'batch', endpoint, input_file_id: file.id, completion_window: '24h', metadata: { suite: 'openai-batch' } });
      expect(batch.status).toBe('in_progress');
      // In progress from creation on (creation validated the file), queued or running; results
      // expire from the end, so no expiry before then.
      expect(batch.in_progress_at).toBe(batch.created_at);
      expect(batch.expires_at).toBeNull();
      expect(batch.request_counts).toMatchObject({ total: lines.length });

      const done = await untilDone(client, batch.id);
      expect(done.status).toBe('completed');
      expect(done.request_counts).toEqual({ total: 11, completed: 9, failed: 2 });
      expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
      expect(done.in_progress_at).toBe(done.created_at);
      expect(done.expires_at).toBeGreaterThan(done.completed_at!);
      const output = await content(client, done.output_file_id);
      const errors = await content(client, done.error_file_id);
      expect(output).toHaveLength(9);
      expect(errors).toHaveLength(2);
      expectEachOnce(output, errors, lines.map((l) => l.custom_id));
      expectUsageOfLines(done.usage, output);
      expect(done.cancelling_at).toBeNull();
      expect((await client.files.retrieve(done.output_file_id!)).bytes).toBe(Buffer.byteLength((await (await client.files.content(done.output_file_id!)).text())));

      // Each line's request id has the form the synchronous endpoint's x-request-id has.
      const requestIdForm = { '/v1/decide': /^dec_[0-9A-HJKMNP-TV-Z]{26}$/, '/v1/systemone': /^req_[0-9a-f]{32}$/, '/v1/decisions': /^req_[0-9A-HJKMNP-TV-Z]{26}$/ }[endpoint as Endpoint];
      for (const line of [...output, ...errors]) expect(line.response!.request_id, endpoint).toMatch(requestIdForm);
      for (const line of output) {
        expect(line).toMatchObject({ id: expect.stringMatching(/^batch_req_/), response: { status_code: 200, request_id: expect.any(String) }, error: null });
        const request = lines.find((l) => l.custom_id === line.custom_id)!;
        const sync = await live(server.url, endpoint, request.body);
        expect(sync.status).toBe(200);
        expectSameBody(line.response!.body, sync.body, line.custom_id);
      }
      const refused = errors.find((l) => l.custom_id === lines[3]!.custom_id)!;
      const sync = await live(server.url, endpoint, lines[3]!.body);
      expect(refused.response!.status_code).toBe(sync.status);
      expect(refused.error).toBeNull();
      BODIES[endpoint].errorShape(refused.response!.body);
      expectSameBody(refused.response!.body, sync.body, 'error body');
      const otherModel = errors.find((l) => l.custom_id === 'other-model')!;
      expect(otherModel.response!.status_code).toBe(400);
      expect(JSON.stringify(otherModel.response!.body)).toContain('one model');
      if (endpoint === '/v1/decisions') expect((otherModel.response!.body as { error: { param: unknown } }).error.param).toBe('model');

      // The batch's own result files exist (the caller reads them) but are no batch input; another key does not see them.
      for (const resultFile of [done.output_file_id!, done.error_file_id!]) {
        const asInput = client.batches.create({ input_file_id: resultFile, endpoint: endpoint as any, completion_window: '24h' });
        await expect(asInput).rejects.toBeInstanceOf(OpenAI.BadRequestError);
        await expect(asInput).rejects.toMatchObject({ status: 400, param: 'input_file_id', message: expect.stringContaining("only a file uploaded with purpose 'batch' can be a batch's input") });
        await expect(sdk(server, KEY_B).batches.create({ input_file_id: resultFile, endpoint: endpoint as any, completion_window: '24h' })).rejects.toMatchObject({ status: 404, param: 'input_file_id' });
      }
    }, 120_000);
  }

  it('leaves a key given twice inside a body to the endpoint, line by line; twice in the envelope refuses the file', async () => {
    const client = sdk(server, KEY_A);
    // Each body as text, with one key twice: JSON.stringify cannot write that.
    const twice: Record<Endpoint, string> = {
      '/v1/decide': '{"model":"svc-alpha","state":"x","questions":{"q":{"type":"noul","instructions":"Is it?"},"q":{"type":"noul","instructions":"Or?"}}}',
      '/v1/systemone': '{"model":"svc-alpha","state":"x","questions":{"q":{"type":"noul","instructions":"Is it?"},"q":{"type":"noul","instructions":"Or?"}}}',
      '/v1/decisions': '{"model":"svc-alpha","input":"x","questions":[{"type":"choice","instructions":"Which?","choices":[{"value":"a"},{"value":"b","value":"c"}]}]}',
    };
    // Where the key is, as the endpoint names it: the message places it, OpenAI's param points at it.
    const place: Record<Endpoint, [string, string | undefined]> = {
      '/v1/decide': ['duplicate key "q" in questions;', undefined],
      '/v1/systemone': ['duplicate key "q" in questions;', undefined],
      '/v1/decisions': ['duplicate key "value" in questions[0].choices[1];', 'questions[0].choices[1].value'],
    };
    for (const endpoint of Object.keys(BODIES) as Endpoint[]) {
      const good = JSON.stringify({ custom_id: 'good', method: 'POST', url: endpoint, body: BODIES[endpoint].good('my parcel is late') });
      const file = await upload(client, Buffer.from(`${good}\n{"custom_id":"dup","method":"POST","url":"${endpoint}","body":${twice[endpoint]}}\n`));
      const batch = await client.batches.create({ input_file_id: file.id, endpoint: endpoint as any, completion_window: '24h' });
      const done = await untilDone(client, batch.id);
      expect(done.request_counts, endpoint).toEqual({ total: 2, completed: 1, failed: 1 });
      const [refused] = await content(client, done.error_file_id);
      const res = await fetch(`${server.url}${endpoint}`, { method: 'POST', headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' }, body: twice[endpoint] });
      expect(refused!.custom_id).toBe('dup');
      expect(refused!.response!.status_code, endpoint).toBe(res.status);
      expectSameBody(refused!.response!.body, await res.json(), `${endpoint} error body`);
      const [message, param] = place[endpoint];
      expect(JSON.stringify(refused!.response!.body)).toContain(JSON.stringify(message).slice(1, -1));
      if (param) expect((refused!.response!.body as { error: { param: string } }).error.param).toBe(param);

      const envelope = await upload(client, Buffer.from(`${good}\n{"custom_id":"a","custom_id":"b","method":"POST","url":"${endpoint}","body":{}}\n`));
      await expect(client.batches.create({ input_file_id: envelope.id, endpoint: endpoint as any, completion_window: '24h' })).rejects.toMatchObject({
        status: 400,
        code: 'invalid_input_file',
        message: expect.stringContaining('line 2: duplicate key "custom_id"'),
      });
    }
  }, 120_000);

  it('pages batches.list() and files.list() with for await; a second key sees nothing of the first', async () => {
    const client = sdk(server, KEY_A);
    const batches: string[] = [];
    for await (const b of client.batches.list({ limit: 2 })) batches.push(b.id);
    expect(batches.length).toBeGreaterThanOrEqual(created.length);
    expect(batches).toEqual(expect.arrayContaining(created));
    expect(new Set(batches).size).toBe(batches.length);
    const page = await client.batches.list({ limit: 1 });
    expect(page.has_more).toBe(true);

    const files: string[] = [];
    for await (const f of client.files.list({ limit: 1 } as any)) files.push(f.id);
    expect(files.length).toBeGreaterThanOrEqual(3);
    expect(new Set(files).size).toBe(files.length);
    expect((await client.files.list({ purpose: 'batch' })).data.map((f) => f.id).sort()).toEqual([...files].sort());
    expect((await client.files.list({ purpose: 'fine-tune' })).data).toEqual([]);
    for (const query of ['purpose=batch&purpose=batch', 'purpose=']) {
      const res = await fetch(`${server.url}/v1/files?${query}`, { headers: { authorization: `Bearer ${KEY_A}` } });
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('purpose');
    }

    const other = sdk(server, KEY_B);
    const seen: string[] = [];
    for await (const b of other.batches.list()) seen.push(b.id);
    for await (const f of other.files.list()) seen.push(f.id);
    expect(seen).toEqual([]);
    const mine = await client.batches.retrieve(created[0]!);
    await expect(other.batches.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.batches.cancel(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.retrieve(mine.input_file_id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.content(mine.input_file_id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.content(mine.output_file_id!)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.files.delete(mine.input_file_id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.batches.create({ input_file_id: mine.input_file_id, endpoint: mine.endpoint as any, completion_window: '24h' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  }, 60_000);

  it("answers the shared batch routes' errors in both shapes: the SDK's typed fields and our code", async () => {
    const client = sdk(server, KEY_A);
    const missing = 'batch_01M8G3KT97RAD3A76YQW4JBTQX';
    const miss = await client.batches.retrieve(missing).catch((err: unknown) => err);
    expect(miss).toBeInstanceOf(OpenAI.NotFoundError);
    expect(miss).toMatchObject({ status: 404, type: 'invalid_request_error', param: null });
    expect((miss as InstanceType<typeof OpenAI.NotFoundError>).message).toContain(missing);
    await expect(client.batches.cancel(missing)).rejects.toMatchObject({ status: 404, type: 'invalid_request_error' });
    const badPage = await client.batches.list({ limit: 0 }).catch((err: unknown) => err);
    expect(badPage).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badPage).toMatchObject({ type: 'invalid_request_error', param: 'limit' });
    const badKey = await sdk(server, 'not-a-key').batches.retrieve(missing).catch((err: unknown) => err);
    expect(badKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(badKey).toMatchObject({ code: 'invalid_api_key' });

    // Our own clients read the same answers' code, message and request_id.
    for (const [method, url, status, code] of [
      ['GET', `/v1/batches/${missing}`, 404, 'not_found'],
      ['POST', `/v1/batches/${missing}/cancel`, 404, 'not_found'],
      ['GET', '/v1/batches?after=nope', 400, 'invalid_question'],
    ] as const) {
      const res = await fetch(`${server.url}${url}`, { method, headers: { authorization: `Bearer ${KEY_A}` } });
      const body = (await res.json()) as { message: string; error: unknown };
      expect(res.status).toBe(status);
      expect(body).toMatchObject({ code, message: expect.any(String), request_id: res.headers.get('x-request-id') });
      expect(body.error).toMatchObject({ message: body.message, type: 'invalid_request_error' });
    }
  }, 60_000);

  it("sets an upload's expires_at as OpenAI does: expires_after from the SDK, 30 days without it; refuses other anchors and lives", async () => {
    const client = sdk(server, KEY_A);
    const bytes = jsonl(requestLines('/v1/decide', 1, 'e'));
    const day = await client.files.create({ file: await toFile(bytes, 'day.jsonl'), purpose: 'batch', expires_after: { anchor: 'created_at', seconds: 86_400 } });
    expect(day.expires_at).toBe(day.created_at + 86_400);
    expect((await client.files.retrieve(day.id)).expires_at).toBe(day.expires_at);
    const plain = await upload(client, bytes);
    expect(plain.expires_at).toBe(plain.created_at + 30 * 86_400);
    for (const [expires_after, param] of [
      [{ anchor: 'created_at', seconds: 3599 }, 'expires_after[seconds]'],
      [{ anchor: 'created_at', seconds: 2_592_001 }, 'expires_after[seconds]'],
      [{ anchor: 'last_active_at', seconds: 3600 }, 'expires_after[anchor]'],
    ] as const) {
      const refused = client.files.create({ file: await toFile(bytes, 'x.jsonl'), purpose: 'batch', expires_after: expires_after as any });
      await expect(refused).rejects.toBeInstanceOf(OpenAI.BadRequestError);
      await expect(refused).rejects.toMatchObject({ status: 400, param });
    }
    // One of the pair without the other (the SDK always sends both; a hand-made form may not).
    for (const [field, value, param] of [
      ['expires_after[seconds]', '3600', 'expires_after[anchor]'],
      ['expires_after[anchor]', 'created_at', 'expires_after[seconds]'],
    ] as const) {
      const form = new FormData();
      form.append('purpose', 'batch');
      form.append(field, value);
      form.append('file', new Blob([bytes]), 'x.jsonl');
      const res = await fetch(`${server.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${KEY_A}` }, body: form });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param, message: expect.stringContaining('required with') });
    }
  }, 60_000);

  it('refuses bad input with OpenAI errors: purpose, too many lines, duplicate custom_ids (with their lines), url, metadata; deletes a file', async () => {
    const client = sdk(server, KEY_A);
    const lines = requestLines('/v1/decide', 3, 'r');
    const wrongPurpose = client.files.create({ file: await toFile(jsonl(lines), 'x.jsonl'), purpose: 'assistants' });
    await expect(wrongPurpose).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(wrongPurpose).rejects.toMatchObject({ status: 400, param: 'purpose', message: expect.stringContaining("purpose 'batch'") });

    const tooMany = upload(client, jsonl(requestLines('/v1/decide', MAX_RECORDS + 1, 'many')));
    await expect(tooMany).rejects.toMatchObject({ status: 413, param: 'file', message: expect.stringContaining(`${MAX_RECORDS} records`) });

    const dup = await upload(client, jsonl([...lines, lines[0], lines[2]]));
    const dupCreate = client.batches.create({ input_file_id: dup.id, endpoint: '/v1/decide' as any, completion_window: '24h' });
    await expect(dupCreate).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(dupCreate).rejects.toMatchObject({
      code: 'duplicate_custom_id',
      param: 'input_file_id',
      message: expect.stringMatching(/line 4: custom_id "r-0" is a duplicate of line 1; line 5: custom_id "r-2" is a duplicate of line 3/),
    });

    const broken = await upload(client, Buffer.from(`${JSON.stringify(lines[0])}\nnot json\n${JSON.stringify({ ...lines[1], custom_id: '' })}\n`));
    await expect(client.batches.create({ input_file_id: broken.id, endpoint: '/v1/decide' as any, completion_window: '24h' })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_input_file',
      message: expect.stringMatching(/has 2 invalid lines.*line 2: .*; line 3: custom_id: required, .*\(got an empty string\)/),
    });

    const good = await upload(client, jsonl(lines));
    await expect(client.batches.create({ input_file_id: good.id, endpoint: '/v1/systemone' as any, completion_window: '24h' })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('line 1: url: must equal the batch\'s endpoint "/v1/systemone"'),
    });
    await expect(client.batches.create({ input_file_id: good.id, endpoint: '/v1/chat/completions' as any, completion_window: '24h' })).rejects.toMatchObject({ status: 400, param: 'endpoint' });
    const metadata = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await expect(client.batches.create({ input_file_id: good.id, endpoint: '/v1/decide' as any, completion_window: '24h', metadata })).rejects.toMatchObject({ status: 400, param: 'metadata' });
    // output_expires_after: checked as OpenAI checks it (then ignored: result files follow the retention).
    const expiring = (value: unknown) => client.batches.create({ input_file_id: good.id, endpoint: '/v1/decide' as any, completion_window: '24h', output_expires_after: value as any });
    await expect(expiring('garbage')).rejects.toMatchObject({ status: 400, param: 'output_expires_after' });
    await expect(expiring({ anchor: 'created_at', seconds: 5 })).rejects.toMatchObject({ status: 400, param: 'output_expires_after.seconds' });
    await expect(expiring({ anchor: 'completed_at', seconds: 3600 })).rejects.toMatchObject({ status: 400, param: 'output_expires_after.anchor' });
    await expect(client.batches.create({ input_file_id: 'file-nope', endpoint: '/v1/decide' as any, completion_window: '24h' })).rejects.toMatchObject({ status: 404, param: 'input_file_id' });
    // A field left out is named as missing, not as JavaScript's `undefined`.
    await expect(client.batches.create({ endpoint: '/v1/decide' as any, completion_window: '24h' } as any)).rejects.toMatchObject({
      status: 400,
      param: 'input_file_id',
      message: expect.stringMatching(/input_file_id: required, a file id, got nothing$/),
    });

    expect(await client.files.delete(good.id)).toEqual({ id: good.id, object: 'file', deleted: true });
    await expect(client.files.retrieve(good.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  }, 60_000);

  it('cancels a large job: a queued one at once, a running one keeping its finished lines, each once', async () => {
    const client = sdk(server, KEY_A);
    const big = await upload(client, jsonl(requestLines('/v1/decide', 600, 'big')));
    const running = await client.batches.create({ input_file_id: big.id, endpoint: '/v1/decide' as any, completion_window: '24h' });
    // DECIDE_BATCH_CONCURRENCY=1: the second job waits behind the first, so its cancel is immediate.
    const queued = await client.batches.create({ input_file_id: big.id, endpoint: '/v1/decide' as any, completion_window: '24h' });
    // A batch keeps its own copy of its input: deleting the file changes nothing for either job.
    await client.files.delete(big.id);
    const cancelledQueued = await client.batches.cancel(queued.id);
    expect(cancelledQueued).toMatchObject({ id: queued.id, object: 'batch', status: 'cancelled', output_file_id: null, error_file_id: null });
    expect(cancelledQueued.request_counts).toEqual({ total: 600, completed: 0, failed: 0 });
    expect(cancelledQueued.cancelling_at).toBe(cancelledQueued.cancelled_at);
    expect(cancelledQueued.usage).toMatchObject({ input_tokens: 0, output_tokens: 0, total_tokens: 0 });

    const asked = Math.floor(Date.now() / 1000);
    const cancelling = await client.batches.cancel(running.id);
    expect(['cancelling', 'cancelled', 'completed']).toContain(cancelling.status);
    if (cancelling.status !== 'completed') expect(Math.abs(cancelling.cancelling_at! - asked)).toBeLessThanOrEqual(1);
    const done = await untilDone(client, running.id);
    const output = await content(client, done.output_file_id);
    const errors = await content(client, done.error_file_id);
    expect(output.length + errors.length).toBe(done.request_counts!.completed + done.request_counts!.failed);
    expect(errors).toEqual([]);
    // The kept lines are a prefix of the input, each once.
    expect(output.map((l) => l.custom_id)).toEqual(Array.from({ length: output.length }, (_, i) => `big-${i}`));
    if (output.length > 0) expectUsageOfLines(done.usage, output);
    if (done.status === 'cancelled') expect(done.cancelling_at).toBeLessThanOrEqual(done.cancelled_at!);
    console.log(`cancel: the running job ended ${done.status} with ${output.length} of 600 lines`);
  }, 120_000);

  it('finishes the SDK flow after a SIGKILL of decide serve mid-job, with every line exactly once', async () => {
    const lines = requestLines('/v1/systemone', 120, 'kill', 50);
    let client = sdk(server, KEY_A);
    const file = await upload(client, jsonl(lines));
    const db = new BatchDbProbe(path.join(dataDir, 'batches.sqlite'));
    let batchId: string | undefined;
    try {
      for (let attempt = 0; batchId === undefined; attempt++) {
        expect(attempt).toBeLessThan(3);
        const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/systemone' as any, completion_window: '24h' });
        for (let job = db.job(batch.id); job.status !== 'completed' && job.rows < 3 * CHUNK_RECORDS; job = db.job(batch.id)) await new Promise((r) => setTimeout(r, 5));
        db.lock();
        try {
          const job = db.job(batch.id);
          // Finished before the lock was taken (the machine was that fast): try a new job.
          if (job.status !== 'in_progress') continue;
          await server.kill();
          console.log(`SIGKILL with ${job.rows} of ${job.total} lines committed`);
          batchId = batch.id;
        } finally {
          db.unlock();
        }
      }
    } finally {
      db.close();
    }
    server = await startServer({ dataDir, modelsDir, env, args: ['--threads', '1'] });
    client = sdk(server, KEY_A);
    const done = await untilDone(client, batchId);
    expect(done.status).toBe('completed');
    expect(done.request_counts).toEqual({ total: 120, completed: 119, failed: 1 });
    const output = await content(client, done.output_file_id);
    const errors = await content(client, done.error_file_id);
    expectEachOnce(output, errors, lines.map((l) => l.custom_id));
    expect(errors.map((l) => l.custom_id)).toEqual(['kill-50']);
    expect(output.map((l) => l.custom_id)).toEqual(lines.map((l) => l.custom_id).filter((id) => id !== 'kill-50'));
    // The usage counted before the kill was committed with its rows and resumed from there.
    expectUsageOfLines(done.usage, output);
  }, 180_000);
});

describe('the openai SDK against two API hosts and a worker on Postgres', () => {
  let postgres: TestPostgres;
  const processes: Array<{ stop(): Promise<unknown> }> = [];

  afterAll(async () => {
    for (const p of processes) await p.stop().catch(() => undefined);
    await postgres?.stop();
  });

  it('uploads on one host, creates on another, a worker runs it, and both hosts serve the results', async () => {
    postgres = await startPostgres();
    const pgEnv = { ...env, DECIDE_DATABASE_URL: await postgres.database('openai_batch') };
    const hostA = await startServer({ dataDir: path.join(workDir, 'pg-a'), modelsDir, env: pgEnv, args: ['--no-worker'] });
    processes.push(hostA);
    const hostB = await startServer({ dataDir: path.join(workDir, 'pg-b'), modelsDir, env: pgEnv, args: ['--no-worker'] });
    processes.push(hostB);
    const a = sdk(hostA, KEY_A);
    const b = sdk(hostB, KEY_A);
    const lines = requestLines('/v1/decisions', 20, 'pg', 7);
    const file = await upload(a, jsonl(lines));
    expect((await b.files.retrieve(file.id)).bytes).toBe(jsonl(lines).length);
    const batch = await b.batches.create({ input_file_id: file.id, endpoint: '/v1/decisions' as any, completion_window: '24h' });
    expect((await a.batches.retrieve(batch.id)).request_counts!.completed).toBe(0);
    const worker = await startWorker({ modelsDir, env: pgEnv, args: ['--threads', '1'] });
    processes.push(worker);
    const done = await untilDone(a, batch.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 20, completed: 19, failed: 1 } });
    const output = await content(b, done.output_file_id);
    const errors = await content(a, done.error_file_id);
    expectEachOnce(output, errors, lines.map((l) => l.custom_id));
    expectUsageOfLines(done.usage, output);
    expect(errors.map((l) => l.custom_id)).toEqual(['pg-7']);
    expect(errors[0]!.response!.status_code).toBe(400);
    BODIES['/v1/decisions'].errorShape(errors[0]!.response!.body);
    const sync = await live(server.url, '/v1/decisions', lines[0]!.body);
    expectSameBody(output[0]!.response!.body, sync.body);
    const other = sdk(hostB, KEY_B);
    await expect(other.files.content(done.output_file_id!)).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    // An upload whose parts go while it is downloaded: the download breaks off instead of ending as
    // a 200 with part of the file, and the host keeps serving.
    const long = requestLines('/v1/decide', 900, 'big').map((l) => ({ ...l, body: { ...(l.body as object), state: 'x'.repeat(3000) } }));
    const big = await upload(a, jsonl(long));
    expect(big.bytes).toBeGreaterThan(2 * 1024 * 1024);
    const db = new pg.Client({ connectionString: pgEnv.DECIDE_DATABASE_URL });
    await db.connect();
    try {
      await db.query('DELETE FROM decide_file_parts WHERE file_id = $1 AND seq >= 1', [big.id]);
    } finally {
      await db.end();
    }
    const res = await fetch(`${hostB.url}/v1/files/${big.id}/content`, { headers: { authorization: `Bearer ${KEY_A}` } });
    await expect(res.arrayBuffer()).rejects.toThrow();
    expect((await fetch(`${hostB.url}/healthz`)).status).toBe(200);
    expect((await b.files.retrieve(file.id)).id).toBe(file.id);
  }, 240_000);
});
