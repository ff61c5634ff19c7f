/**
 * The batch endpoints over real HTTP (createServer in this process, a real SQLite file, real files):
 * the mixed-file job, form questions, ownership, results before completion, cancel, listing and
 * paging, creation errors and limits, retention; the answers of jobs made with the form and with
 * OpenAI's JSON body against the schemas /openapi.json declares for them.
 */
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { NormalizedDecideRequest } from '../../src/api/validate.js';
import { createServer } from '../../src/server/app.js';
import { responseSchemaErrors, type OpenApiDocument } from '../helpers/openapi-responses.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { client, goodLines, maxProbDiff, MODEL_ID, mixedFile, parseRows, QUESTIONS, tempWorkspace, type ResultRow } from './helpers.js';

let workDir: string;
let modelsDir: string;
let svc: DecisionService;
const servers: FastifyInstance[] = [];

/**
 * A gate in front of decideRecords: `hold(n)` lets n more calls through, then blocks the rest until
 * `release()`. Lets a test catch a job in progress without depending on timing.
 */
const gate = {
  open: true,
  passes: 0,
  waiters: [] as Array<() => void>,
  hold(passes: number) {
    this.open = false;
    this.passes = passes;
  },
  release() {
    this.open = true;
    for (const w of this.waiters.splice(0)) w();
  },
  async pass() {
    if (this.open) return;
    if (this.passes > 0) {
      this.passes -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  },
};

/** A server on its own data dir; `env` sets DECIDE_BATCH_* for its BatchService. */
async function server(name: string, env: Record<string, string> = {}): Promise<string> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const gated = Object.create(svc) as DecisionService;
    gated.decideRecords = async (model: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch') => {
      await gate.pass();
      return svc.decideRecords(model, requests, priority);
    };
    const app = await createServer({
      service: gated,
      dataDir: path.join(workDir, name),
      apiKeys: ['key-a', 'key-b', 'key-c', 'key-d'],
      rateLimit: false,
    });
    servers.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address() as { port: number };
    return `http://127.0.0.1:${address.port}`;
  } finally {
    process.env = saved;
  }
}

let url: string;

beforeAll(async () => {
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-api'));
  svc = await DecisionService.open({ modelsDir, preload: [MODEL_ID] });
  url = await server('main', { DECIDE_BATCH_CHUNK_RECORDS: '4' });
});

afterAll(async () => {
  gate.release();
  for (const app of servers) await app.close();
  await svc?.close();
  await rm(workDir, { recursive: true, force: true });
});

describe('a batch job', () => {
  it('completes a file with good rows, blank lines and bad records: failed rows carry the right codes, counts match, order kept', async () => {
    const a = client(url, 'key-a');
    const { text, expected } = mixedFile();
    const created = await a.create({ model: 'svc-alpha', file: text });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/v1/batches/${created.body.id}`);
    expect(created.body).toMatchObject({ object: 'batch', model: MODEL_ID, progress: { total: expected.length } });
    expect(created.body.id).toMatch(/^batch_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(['queued', 'in_progress']).toContain(created.body.status);
    expect(created.body.completed_at).toBeNull();
    expect(new Date(created.body.created_at as string).toISOString()).toBe(created.body.created_at);

    const done = await a.waitFor(created.body.id, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const failures = expected.filter((e) => e.code).length;
    expect(done.progress).toEqual({ total: expected.length, completed: expected.length - failures, failed: failures });
    expect(typeof done.completed_at).toBe('string');

    const res = await a.results(created.body.id);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/x-ndjson/);
    const rows = parseRows(res.text);
    expect(rows.map((r) => ({ custom_id: r.custom_id, code: r.error?.code }))).toEqual(expected.map((e) => ({ custom_id: e.custom_id, code: e.code })));
    for (const row of rows.filter((r) => !r.error)) {
      expect(row.id).toMatch(/^dec_/);
      expect(Object.keys(row.answers!)).toEqual(['refund', 'topic']);
      expect(row.usage!.input_tokens).toBeGreaterThan(0);
    }
    expect(rows.find((r) => r.custom_id === 'long')!.error!.message).toMatch(/state is (more than )?\d+ tokens; the limit/);
    expect(rows.find((r) => r.custom_id === 'mix-3' && r.error)!.error!.message).toMatch(/duplicate of line 4/);

    // A batch row answers exactly as POST /v1/decide does.
    const first = JSON.parse(text.split('\n')[0]!) as { state: string };
    const live = await fetch(`${url}/v1/decide`, {
      method: 'POST',
      headers: { authorization: 'Bearer key-a', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-alpha', state: first.state, questions: QUESTIONS }),
    });
    const liveBody = (await live.json()) as ResultRow;
    expect(maxProbDiff({ ...liveBody, custom_id: 'mix-0' }, rows[0]!)).toBeLessThan(1e-6);
  });

  it('applies the form questions to records without their own', async () => {
    const a = client(url, 'key-a');
    const form = { urgent: { type: 'noul', instructions: 'Is it urgent?' } };
    const file = [JSON.stringify({ custom_id: 'x', state: 'one' }), JSON.stringify({ custom_id: 'y', state: 'two', questions: QUESTIONS })].join('\n');
    const created = await a.create({ model: MODEL_ID, file, questions: JSON.stringify(form) });
    expect(created.status).toBe(201);
    await a.waitFor(created.body.id, ['completed']);
    const rows = parseRows((await a.results(created.body.id)).text);
    expect(rows.map((r) => Object.keys(r.answers!))).toEqual([['urgent'], ['refund', 'topic']]);
    // The questions may also come as a file part (curl -F questions=@q.json).
    const asFile = await a.create({ model: MODEL_ID, file, questions: JSON.stringify(form), questionsAsFile: true });
    expect(asFile.status).toBe(201);
    await a.waitFor(asFile.body.id, ['completed']);
    expect(parseRows((await a.results(asFile.body.id)).text).map((r) => Object.keys(r.answers!))).toEqual([['urgent'], ['refund', 'topic']]);
  });
});

describe('ownership, results before completion, cancel', () => {
  it("hides another key's batch (404), refuses results until final (404 with the status), cancels keeping finished rows", async () => {
    const a = client(url, 'key-a');
    const b = client(url, 'key-b');
    const lines = goodLines(40, 9, 'c');
    gate.hold(2);
    try {
      const created = await a.create({ model: 'svc-alpha', file: lines.join('\n') });
      expect(created.status).toBe(201);
      const id = created.body.id;
      // Two chunks of 4 pass the gate; the third waits.
      const until = Date.now() + 30_000;
      let seen = await a.get(id);
      while (seen.body.progress.completed < 8 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
        seen = await a.get(id);
      }
      expect(seen.body).toMatchObject({ status: 'in_progress', progress: { total: 40, completed: 8, failed: 0 } });

      const early = await a.results(id);
      expect(early.status).toBe(404);
      const earlyBody = JSON.parse(early.text) as { code: string; message: string };
      expect(earlyBody.code).toBe('not_found');
      expect(earlyBody.message).toMatch(/status is in_progress/);
      expect(earlyBody.message).toMatch(/poll GET \/v1\/batches\//);

      for (const res of [await b.get(id), await b.cancel(id)]) {
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ code: 'not_found', message: `batch '${id}' not found` });
      }
      expect((await b.results(id)).status).toBe(404);
      expect((await b.list()).body.data.map((x) => x.id)).not.toContain(id);
      expect((await a.get('batch_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);

      const cancelling = await a.cancel(id);
      expect(cancelling.status).toBe(200);
      expect(cancelling.body.status).toBe('cancelling');
      gate.release();
      const final = await a.waitFor(id, ['cancelled', 'completed']);
      expect(final.status).toBe('cancelled');
      // docs/api.md: a cancelled job keeps the counts of the rows finished before it stopped.
      expect(final.progress).toEqual({ total: 40, completed: 8, failed: 0 });
      expect(typeof final.completed_at).toBe('string');
      const rows = parseRows((await a.results(id)).text);
      expect(rows.map((r) => r.custom_id)).toEqual(lines.slice(0, 8).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
      // Cancelling a final batch changes nothing.
      expect((await a.cancel(id)).body.status).toBe('cancelled');
    } finally {
      gate.release();
    }
  });

  it('cancels a queued batch at once', async () => {
    const a = client(url, 'key-a');
    gate.hold(0);
    try {
      // Two batches occupy both runner slots; the third stays queued.
      const busy = [await a.create({ model: 'svc-alpha', file: goodLines(8, 1, 'q1').join('\n') }), await a.create({ model: 'svc-alpha', file: goodLines(8, 2, 'q2').join('\n') })];
      const queued = await a.create({ model: 'svc-alpha', file: goodLines(8, 3, 'q3').join('\n') });
      expect((await a.get(queued.body.id)).body.status).toBe('queued');
      const cancelled = await a.cancel(queued.body.id);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', progress: { completed: 0, failed: 0 } });
      expect((await a.results(queued.body.id)).text).toBe('');
      gate.release();
      for (const x of busy) expect((await a.waitFor(x.body.id, ['completed'])).status).toBe('completed');
    } finally {
      gate.release();
    }
  });
});

describe('listing', () => {
  it("lists the caller's batches newest first, with limit and after", async () => {
    const c = client(url, 'key-c');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await c.create({ model: 'svc-alpha', file: goodLines(1, i, `l${i}`)[0]! })).body.id);
    const page1 = await c.list('?limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body).toMatchObject({ object: 'list', has_more: true, first_id: ids[2], last_id: ids[1] });
    expect(page1.body.data.map((x) => x.id)).toEqual([ids[2], ids[1]]);
    const page2 = await c.list(`?limit=2&after=${page1.body.last_id}`);
    expect(page2.body.data.map((x) => x.id)).toEqual([ids[0]]);
    expect(page2.body.has_more).toBe(false);
    expect((await c.list()).body.data.map((x) => x.id)).toEqual([ids[2], ids[1], ids[0]]);
    for (const q of ['?limit=0', '?limit=101', '?limit=x', '?after=nope']) {
      const bad = await c.list(q);
      expect([bad.status, bad.body.code], q).toEqual([400, 'invalid_question']);
    }
  });
});

describe('the OpenAPI document', () => {
  it("declares the answers of both dialects: GET, list and cancel of a job made with OpenAI's JSON body or with the form validate against it", async () => {
    const auth = { authorization: 'Bearer key-d' };
    const doc = (await (await fetch(`${url}/openapi.json`, { headers: auth })).json()) as OpenApiDocument;
    const expectValid = async (method: string, docPath: string, status: number, res: Response) => {
      expect(res.status, `${method} ${docPath}`).toBe(status);
      const body = await res.json();
      expect(await responseSchemaErrors(doc, method, docPath, status, body), `${method} ${docPath}: ${JSON.stringify(body).slice(0, 300)}`).toBeUndefined();
      return body as { id: string; status: string };
    };
    const upload = new FormData();
    upload.append('purpose', 'batch');
    const lines = goodLines(3, 5, 'oa').map((l) => JSON.parse(l) as { custom_id: string; state: string; questions: unknown });
    const requests = lines.map(({ custom_id, state, questions }) => JSON.stringify({ custom_id, method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state, questions } }));
    upload.append('file', new Blob([requests.join('\n')]), 'requests.jsonl');
    const file = await expectValid('POST', '/v1/files', 200, await fetch(`${url}/v1/files`, { method: 'POST', body: upload, headers: auth }));
    // The FileObject declared names every field a real one has (status_details included), no more.
    const declared = doc.paths['/v1/files'].post.responses['200'].content?.['application/json'].schema as { properties: Record<string, unknown> };
    expect(Object.keys(declared.properties).sort()).toEqual(Object.keys(file).sort());
    const createOpenAi = () =>
      fetch(`${url}/v1/batches`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' }),
      });

    const openai = await expectValid('POST', '/v1/batches', 200, await createOpenAi());
    const ours = await client(url, 'key-d').create({ model: 'svc-alpha', file: goodLines(2, 6, 'ours').join('\n') });
    expect(ours.status).toBe(201);
    for (const id of [openai.id, ours.body.id]) {
      await expectValid('GET', '/v1/batches/{id}', 200, await fetch(`${url}/v1/batches/${id}`, { headers: auth }));
      await client(url, 'key-d').waitFor(id, ['completed']);
      // Final: completed_at, output files and counts set.
      await expectValid('GET', '/v1/batches/{id}', 200, await fetch(`${url}/v1/batches/${id}`, { headers: auth }));
    }
    gate.hold(0);
    try {
      const held = await expectValid('POST', '/v1/batches', 200, await createOpenAi());
      const cancelled = await expectValid('POST', '/v1/batches/{id}/cancel', 200, await fetch(`${url}/v1/batches/${held.id}/cancel`, { method: 'POST', headers: auth }));
      expect(cancelled.status).toMatch(/^cancell/);
    } finally {
      gate.release();
    }
    const list = (await expectValid('GET', '/v1/batches', 200, await fetch(`${url}/v1/batches`, { headers: auth }))) as unknown as { data: Array<Record<string, unknown>> };
    // Both dialects on the one page, each item as it was created.
    expect(list.data.filter((b) => 'request_counts' in b)).toHaveLength(2);
    expect(list.data.filter((b) => 'progress' in b)).toHaveLength(1);
  });
});

describe('creation errors and limits', () => {
  it('rejects a missing model or file, an empty file, an unknown model and bad questions; enforces the size and record limits', async () => {
    const dataDir = path.join(workDir, 'limits');
    const limitsUrl = await server('limits', { DECIDE_BATCH_MAX_FILE_BYTES: '2000', DECIDE_BATCH_MAX_RECORDS: '5' });
    const a = client(limitsUrl, 'key-a');
    const tiny = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `s-${i}`, state: `state ${i}`, questions: { q: { type: 'noul', instructions: 'Yes?' } } }));
    const small = tiny(5);
    const cases: Array<[Parameters<typeof a.create>[0], number, string, RegExp]> = [
      [{ file: small.join('\n') }, 400, 'invalid_question', /^model: required/],
      [{ model: 'svc-alpha' }, 400, 'invalid_question', /^file: required/],
      [{ model: 'svc-alpha', file: '' }, 400, 'invalid_question', /^file: empty/],
      [{ model: 'svc-alpha', file: '\n  \n\n' }, 400, 'invalid_question', /^file: empty/],
      [{ model: 'svc-omega', file: small.join('\n') }, 404, 'not_found', /svc-omega.*not installed/],
      [{ model: 'svc-alpha', file: small.join('\n'), questions: '{not json' }, 400, 'invalid_question', /^questions: the form field must be JSON/],
      [{ model: 'svc-alpha', file: small.join('\n'), questions: '{}' }, 400, 'invalid_question', /^questions: must contain at least 1/],
      [{ model: 'svc-alpha', file: tiny(6).join('\n') }, 413, 'state_too_long', /more than the limit of 5 records/],
      [{ model: 'svc-alpha', file: `${JSON.stringify({ custom_id: 'big', state: 'z'.repeat(3000), questions: QUESTIONS })}\n` }, 413, 'state_too_long', /larger than the limit of 2000 bytes/],
    ];
    for (const [fields, status, code, message] of cases) {
      const res = await a.create(fields);
      expect([res.status, res.body.code], JSON.stringify(fields).slice(0, 100)).toEqual([status, code]);
      expect(res.body.message as string).toMatch(message);
    }
    // At the limits exactly: accepted (5 records, under 2000 bytes).
    expect(Buffer.byteLength(small.join('\n'))).toBeLessThanOrEqual(2000);
    const ok = await a.create({ model: 'svc-alpha', file: small.join('\n') });
    expect(ok.status).toBe(201);
    expect(ok.body.progress.total).toBe(5);
    // Rejected uploads leave nothing behind.
    const stagingLeft = await readdir(path.join(dataDir, 'batches', '.staging'), { recursive: true, withFileTypes: true });
    expect(stagingLeft.filter((e) => e.isFile() && e.name !== '.owner.lock').map((e) => e.name)).toEqual([]);
    expect((await readdir(path.join(dataDir, 'batches'))).filter((n) => n !== '.staging')).toEqual([ok.body.id]);
    await a.waitFor(ok.body.id, ['completed']);
  });
});

describe('retention', () => {
  it('expires results after the retention time: status expired, files deleted, results 404', async () => {
    const dataDir = path.join(workDir, 'retention');
    const retentionMs = 1000;
    // No periodic sweep during the test: only the sweep at start runs, so what the test sees does
    // not depend on how fast this machine is.
    const env = { DECIDE_BATCH_RETENTION_SECONDS: String(retentionMs / 1000), DECIDE_BATCH_SWEEP_SECONDS: '3600' };
    const first = client(await server('retention', env), 'key-a');
    const created = await first.create({ model: 'svc-alpha', file: goodLines(3, 7, 'r').join('\n') });
    const done = await first.waitFor(created.body.id, ['completed']);
    const before = await first.results(created.body.id);
    expect(before.status).toBe(200);
    expect(parseRows(before.text)).toHaveLength(3);

    // Past the retention time, a restarted server's first sweep expires the job.
    const expiresAt = Date.parse(done.completed_at as string) + retentionMs;
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 20));
    await servers.pop()!.close();
    const a = client(await server('retention', env), 'key-a');
    const expired = (await a.get(created.body.id)).body;
    expect(expired).toMatchObject({ status: 'expired', progress: { total: 3, completed: 3, failed: 0 } });
    expect(existsSync(path.join(dataDir, 'batches', created.body.id))).toBe(false);
    const res = await a.results(created.body.id);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'not_found', message: expect.stringMatching(/expired/) });
  });
});
