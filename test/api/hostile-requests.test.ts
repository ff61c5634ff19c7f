/**
 * Requests a hostile or careless client sends, over real HTTP (a listening server, fetch and raw
 * sockets): broken multipart bodies, repeated form fields and JSON keys, two Authorization headers,
 * compressed bodies, keys in query strings, guessed keys, a question too long for any state. Each
 * is a 4xx in the error shape; the log has no stack trace, no query string and no body text.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Writable } from 'node:stream';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, decideBody, expectErrorShape, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let base: string;
let port: number;
const logLines: string[] = [];
/** Called after each log write: logLine() waits through it instead of sleeping. */
const onLogWrite = new Set<() => void>();

beforeAll(async () => {
  dirs = await tempModels();
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      for (const wake of onLogWrite) wake();
      cb();
    },
  });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: { level: 'info', stream } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as net.AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as written on one connection and reads the response until the server closes it. */
function rawRequest(request: string | Buffer, opts: { closeAfterWrite?: boolean } = {}): Promise<RawResponse | null> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(request);
      if (opts.closeAfterWrite) socket.destroy();
    });
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (piece: string) => {
      data += piece;
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end));
      if (length && data.length >= end + 4 + Number(length[1])) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      if (data === '') return resolve(null);
      const end = data.indexOf('\r\n\r\n');
      const [statusLine, ...headerLines] = data.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const h of headerLines) {
        const i = h.indexOf(':');
        headers[h.slice(0, i).toLowerCase()] = h.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: Buffer.from(data.slice(end + 4), 'latin1').toString('utf8') });
    });
  });
}

function post(path: string, headers: Record<string, string>, body: string): string {
  const lines = [`POST ${path} HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${TEST_KEY}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** post() with a body of raw bytes (not necessarily UTF-8). */
function postBytes(path: string, headers: Record<string, string>, body: Buffer): Buffer {
  const head = post(path, headers, '').replace(/Content-Length: 0/, `Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(head), body]);
}

function expectError(res: RawResponse | null, status: number, code: string): string {
  expect(res).not.toBeNull();
  expect(res!.status).toBe(status);
  const body = JSON.parse(res!.body);
  expectErrorShape(body, code, res!.headers['x-request-id']!);
  return body.message as string;
}

/** The first log line from index `from` on that `matches`, as soon as it is written. */
async function logLine(from: number, matches: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  for (;;) {
    const found = logLines.slice(from).map((l) => JSON.parse(l) as Record<string, unknown>).find(matches);
    if (found) return found;
    await new Promise<void>((resolve) => {
      const wake = () => {
        onLogWrite.delete(wake);
        resolve();
      };
      onLogWrite.add(wake);
    });
  }
}

/** The log lines of one request, by its id. */
function logOf(requestId: string): Array<Record<string, unknown>> {
  return logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.request_id === requestId);
}

const BOUNDARY = 'b0undary';
function form(parts: Array<{ name: string; value: string; filename?: string }>, close = true): string {
  let body = '';
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    body += `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${p.filename ? 'Content-Type: application/x-ndjson\r\n' : ''}\r\n${p.value}\r\n`;
  }
  return close ? `${body}--${BOUNDARY}--\r\n` : body;
}
const FORM_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const RECORD = JSON.stringify({ custom_id: 'r1', state: 's', questions: { q: { type: 'noul', instructions: 'Is it?' } } });

describe('a refused request is logged with our code on every door, each line whole: method, path and status', () => {
  it.each([
    ['/v1/decide', 400, 'invalid_question', 'application/json', '{"model":"svc-alpha","state":"s","questions":{"q":{"type":"noul","instructions":"a"},"q":{"type":"noul","instructions":"b"}}}'],
    ['/v1/decide', 404, 'not_found', 'application/json', JSON.stringify({ model: 'no-such-model', state: 's', questions: { q: { type: 'noul', instructions: 'a' } } })],
    ['/v1/systemone', 422, 'invalid_question', 'application/json', '{"model":"svc-alpha","state":"s"}'],
    ['/v1/decisions', 400, 'invalid_question', 'application/json', '{"model":"svc-alpha"}'],
    ['/v1/decisions', 404, 'not_found', 'application/json', JSON.stringify({ model: 'no-such-model', input: 's', questions: [{ type: 'predicate', name: 'q', instructions: 'a' }] })],
    ['/v1/batches', 400, 'invalid_question', 'application/json', '{"endpoint":"/v1/decisions","completion_window":"24h"}'],
    ['/v1/files/file-nope', 404, 'not_found', undefined, undefined],
    ['/v1/decisions', 405, 'invalid_question', undefined, undefined],
    ['/v1/systemone/below', 404, 'not_found', undefined, undefined],
  ] as const)('%s, a %i: logged as %s', async (path, status, code, type, body) => {
    const method = body === undefined ? 'GET' : 'POST';
    const res = await fetch(`${base}${path}`, { method, headers: { ...AUTH, ...(type ? { 'content-type': type } : {}) }, body });
    expect(res.status).toBe(status);
    const requestId = res.headers.get('x-request-id')!;
    const rejected = await logLine(0, (l) => l.request_id === requestId && l.msg === 'request rejected');
    expect(rejected).toMatchObject({ code, status, req: { method, url: path } });
    const completed = await logLine(0, (l) => l.request_id === requestId && l.msg === 'request completed');
    expect(completed).toMatchObject({ req: { method, url: path }, res: { statusCode: status }, responseTime: expect.any(Number) });
  });
});

describe('POST /v1/batches with a body that is not good multipart', () => {
  const cases: Array<[string, Record<string, string>, string]> = [
    ['multipart/form-data without a boundary', { 'Content-Type': 'multipart/form-data' }, form([{ name: 'model', value: 'svc-alpha' }])],
    ['a body that is not multipart at all', { 'Content-Type': FORM_TYPE }, '{"model": "svc-alpha"}'],
    [
      'a multipart body cut off inside the file part',
      { 'Content-Type': FORM_TYPE },
      form([{ name: 'model', value: 'svc-alpha' }]) .replace(`--${BOUNDARY}--\r\n`, '') + `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n\r\n${RECORD.slice(0, 20)}`,
    ],
    ['a multipart body without its closing boundary', { 'Content-Type': FORM_TYPE }, form([{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }], false)],
  ];
  for (const [what, headers, body] of cases) {
    it(`${what}: 400 invalid_question, logged without a stack trace`, async () => {
      const res = await rawRequest(post('/v1/batches', headers, body));
      expect(expectError(res, 400, 'invalid_question')).toMatch(/multipart\/form-data/);
      const log = logOf(res!.headers['x-request-id']!);
      expect(log.some((l) => l.msg === 'request rejected')).toBe(true);
      expect(JSON.stringify(log)).not.toMatch(/stack|"level":50/);
    });
  }

  it('a client that hangs up in the middle of the upload leaves the server answering, logged as abandoned (499), nothing as a failure', async () => {
    const body = form([{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }]);
    const head = post('/v1/batches', { 'Content-Type': FORM_TYPE }, body).replace(/Content-Length: \d+/, `Content-Length: ${body.length + 5000}`);
    const before = logLines.length;
    expect(await rawRequest(head, { closeAfterWrite: true })).toBeNull();
    const res = await fetch(`${base}/v1/models`, { headers: AUTH });
    expect(res.status).toBe(200);
    // The check waits for the aborted upload's own last word (its error handling has run), not for a time.
    const incoming = await logLine(before, (l) => l.msg === 'incoming request' && (l.req as { url?: string })?.url === '/v1/batches');
    const last = await logLine(before, (l) => l.request_id === incoming.request_id && l.msg !== 'incoming request');
    // No answer went out: not a 400 that nobody received.
    expect(last).toMatchObject({ level: 30, msg: 'request abandoned: the client closed the connection before its answer', status: 499, req: { method: 'POST', url: '/v1/batches' } });
    expect(logOf(incoming.request_id as string).map((l) => l.msg)).not.toContain('request rejected');
    expect(logLines.slice(before).join('\n')).not.toMatch(/"level":50|stack/);
  });

  it('a repeated model or questions form field: 400 naming the field (never the last one silently)', async () => {
    const twoModels = form([
      { name: 'model', value: 'svc-alpha' },
      { name: 'model', value: 'svc-alpha-2026-10' },
      { name: 'file', value: RECORD, filename: 'in.jsonl' },
    ]);
    expect(expectError(await rawRequest(post('/v1/batches', { 'Content-Type': FORM_TYPE }, twoModels)), 400, 'invalid_question')).toMatch(
      /form field 'model': given more than once/,
    );
    const q = JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } });
    const twoQuestions = form([
      { name: 'model', value: 'svc-alpha' },
      { name: 'questions', value: q },
      { name: 'questions', value: q, filename: 'q.json' },
      { name: 'file', value: RECORD, filename: 'in.jsonl' },
    ]);
    expect(expectError(await rawRequest(post('/v1/batches', { 'Content-Type': FORM_TYPE }, twoQuestions)), 400, 'invalid_question')).toMatch(
      /form field 'questions': given more than once/,
    );
    // The same form with each field once is accepted.
    const once = form([
      { name: 'model', value: 'svc-alpha' },
      { name: 'file', value: RECORD, filename: 'in.jsonl' },
    ]);
    expect((await rawRequest(post('/v1/batches', { 'Content-Type': FORM_TYPE }, once)))!.status).toBe(201);
  });
});

describe('a form field named like an Object.prototype member', () => {
  it('is an unknown field like any other, on every form: the same 400 naming it (OpenAI: in param), as a text field or a file part', async () => {
    const forms: Array<[string, Array<{ name: string; value: string; filename?: string }>]> = [
      ['/v1/files', [{ name: 'purpose', value: 'batch' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }]],
      ['/v1/batches', [{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }]],
      ['/v1/batches/validate', [{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }]],
    ];
    const answer = async (route: string, parts: Array<{ name: string; value: string; filename?: string }>) => {
      const res = await rawRequest(post(route, { 'Content-Type': FORM_TYPE }, form(parts)));
      expect(res?.status, route).toBe(400);
      return JSON.parse(res!.body) as { code?: string; message?: string; error?: { message: string; param: string | null } };
    };
    for (const [route, good] of forms) {
      for (const filename of [undefined, 'x.jsonl']) {
        const bogus = await answer(route, [{ name: 'bogus', value: '1', filename }, ...good]);
        for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__']) {
          // Before the good parts and after them.
          for (const parts of [[{ name, value: '1', filename }, ...good], [...good, { name, value: '1', filename }]]) {
            const what = `${route} ${name} ${filename ? 'file' : 'text'}`;
            const got = await answer(route, parts);
            if (bogus.error) {
              expect(got.error, what).toEqual({ ...bogus.error, message: bogus.error.message.replace("'bogus'", `'${name}'`), param: name });
            } else {
              expect(got.code, what).toBe(bogus.code);
              expect(got.message, what).toBe(bogus.message!.replace("'bogus'", `'${name}'`));
            }
          }
        }
      }
    }
  });
});

describe('the batch form: a part without a name, questions that are not UTF-8', () => {
  const routes = ['/v1/batches', '/v1/batches/validate'];

  it('a part without a name (form-data only, or only a filename): 400 saying so, logged without a stack trace', async () => {
    const nameless = [
      `--${BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nsvc-alpha\r\n`,
      `--${BOUNDARY}\r\nContent-Disposition: form-data; filename="a.jsonl"\r\n\r\n${RECORD}\n\r\n`,
    ];
    for (const route of routes) {
      for (const part of nameless) {
        // Before the part and after it: whichever the form has read so far, the answer is the same.
        for (const body of [form([{ name: 'model', value: 'svc-alpha' }]).replace(`--${BOUNDARY}--`, `${part}--${BOUNDARY}--`), `${part}${form([{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: RECORD, filename: 'in.jsonl' }])}`]) {
          const res = await rawRequest(post(route, { 'Content-Type': FORM_TYPE }, body));
          expect(expectError(res, 400, 'invalid_question'), route).toBe(
            'request body: a form part has no name (Content-Disposition: form-data without name="..."); send the fields model, file and optionally questions, each named',
          );
          expect(JSON.stringify(logOf(res!.headers['x-request-id']!))).not.toMatch(/stack|"level":50/);
        }
      }
    }
  });

  it('questions whose bytes are not UTF-8, as a text field or as a file part: 400 naming the field, never U+FFFD in their place', async () => {
    const bad = Buffer.concat([Buffer.from('{"q'), Buffer.from([0xff]), Buffer.from('": {"type": "noul", "instructions": "o'), Buffer.from([0xc3, 0x28]), Buffer.from('k?"}}')]);
    const bytesForm = (questions: Buffer, filename?: string) =>
      Buffer.concat([
        Buffer.from(form([{ name: 'model', value: 'svc-alpha' }, { name: 'file', value: JSON.stringify({ custom_id: 'b', state: 'ok' }), filename: 'in.jsonl' }], false)),
        Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="questions"${filename ? `; filename="${filename}"` : ''}\r\n\r\n`),
        questions,
        Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
      ]);
    for (const route of routes) {
      for (const filename of [undefined, 'q.json']) {
        const res = await rawRequest(postBytes(route, { 'Content-Type': FORM_TYPE }, bytesForm(bad, filename)));
        expect(expectError(res, 400, 'invalid_question'), `${route} ${filename ?? 'text field'}`).toBe("form field 'questions': not valid UTF-8");
      }
    }
    // Text beyond ASCII, a U+FFFD the client wrote itself included, is UTF-8 and accepted.
    const good = Buffer.from(JSON.stringify({ 'q\u00e9': { type: 'noul', instructions: 'caf\u00e9 \ufffd ok?' } }));
    for (const filename of [undefined, 'q.json']) {
      const res = await rawRequest(postBytes('/v1/batches/validate', { 'Content-Type': FORM_TYPE }, bytesForm(good, filename)));
      expect(res!.status, filename ?? 'text field').toBe(200);
      expect(JSON.parse(res!.body)).toMatchObject({ records: 1, valid: 1, invalid: 0 });
    }
  });
});

describe('JSON bodies', () => {
  const decide = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json', ...headers }, body });

  it('a question id given twice is 400 naming it (JSON.parse would keep the last one)', async () => {
    const body = '{"model": "svc-alpha", "state": "s", "questions": {"q1": {"type": "noul", "instructions": "A?"}, "q1": {"type": "noul", "instructions": "B?"}}}';
    const res = await decide(body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { message: string };
    expectErrorShape(json, 'invalid_question', res.headers.get('x-request-id')!);
    expect(json.message).toBe('request body: duplicate key "q1" in questions; each key may appear once');
    // Escaped spellings of the same key are the same key.
    const escaped = body.replace('"q1": {"type": "noul", "instructions": "B?"}', '"q\\u0031": {"type": "noul", "instructions": "B?"}');
    expect(((await (await decide(escaped)).json()) as { message: string }).message).toMatch(/duplicate key "q1"/);
  });

  it('a lone surrogate escape in a key or a string is 400 naming where (not Unicode; no UTF-8 client could read it back); a pair is fine', async () => {
    const cases: Array<[string, string]> = [
      ['{"model": "svc-alpha", "state": "s", "questions": {"q\\ud800": {"type": "noul", "instructions": "A?"}}}', 'in questions'],
      ['{"model": "svc-alpha", "state": {"note": "x\\udc00y"}, "questions": {"q": {"type": "noul", "instructions": "A?"}}}', 'in state.note'],
      ['{"model": "svc-alpha", "state": "s", "questions": {"q": {"type": "choice", "instructions": "A?", "criteria": {"a\\ud83d": "1", "b": "2"}}}}', 'in questions.q.criteria'],
    ];
    for (const [body, where] of cases) {
      const res = await decide(body);
      expect(res.status, body).toBe(400);
      const json = (await res.json()) as { message: string };
      expectErrorShape(json, 'invalid_question', res.headers.get('x-request-id')!);
      expect(json.message).toContain(`a string ${where} holds a lone surrogate`);
    }
    // A surrogate pair (an emoji written as two escapes) and an escaped backslash before "ud800" are text.
    const pair = await decide('{"model": "svc-alpha", "state": "\\ud83d\\ude00 \\\\ud800", "questions": {"q\\ud83d\\ude00": {"type": "noul", "instructions": "A?"}}}');
    expect(pair.status).toBe(200);
    expect(Object.keys(((await pair.json()) as { answers: object }).answers)).toEqual(['q\u{1f600}']);
  });

  it('no body and no Content-Type: the empty-body message in each door, never "undefined"', async () => {
    for (const path of ['/v1/decide', '/v1/systemone', '/v1/decisions']) {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: AUTH });
      const text = await res.text();
      expect(res.status, path).toBe(path === '/v1/systemone' ? 422 : 400);
      expect(text, path).toContain('empty; send a JSON object');
      expect(text, path).not.toContain('undefined');
    }
  });

  it('malformed JSON: the message gives a position and never any of the body', async () => {
    const secret = 'SECRETSTATE';
    const bodies = [
      `{"model": "svc-alpha", "state": "${secret}" x}`,
      `{"model": "svc-alpha", "state": "${'padding '.repeat(30)}${secret}" ${secret}}`,
      `{"model": "svc-alpha", "state": ${secret}}`,
      `{"model": "svc-alpha", "state": "${secret}`,
      `{"model": "svc-alpha", "${secret}": 1,}`,
      `${secret}`,
    ];
    for (const body of bodies) {
      const res = await decide(body);
      expect(res.status).toBe(400);
      const { message } = (await res.json()) as { message: string };
      expect(message, body).toMatch(/^request body: not valid JSON( \((at line \d+, column \d+|it ends early)\))?$/);
      expect(message).not.toContain('SECRET');
    }
  });

  it('a question whose instructions and options alone overflow the context: 400 invalid_question naming it, not 413', async () => {
    const long = 'word '.repeat(390);
    const criteria = Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`o${i}`, `${i} ${long}`]));
    const body = JSON.stringify(decideBody('a short state', { fits: { type: 'noul', instructions: 'Is it?' }, huge: { type: 'choice', instructions: 'Which?', criteria } }));
    const res = await decide(body);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { message: string };
    expectErrorShape(json, 'invalid_question', res.headers.get('x-request-id')!);
    expect(json.message).toMatch(/^questions\["huge"\]: its instructions and options take \d+ tokens .* more than the model's context of 4096 tokens even with an empty state/);

    // A long state does not make it a 413: the question is checked first.
    const withLongState = await decide(JSON.stringify(decideBody('word '.repeat(12_000), { huge: { type: 'choice', instructions: 'Which?', criteria } })));
    expect(withLongState.status).toBe(400);
    expect(((await withLongState.json()) as { message: string }).message).toMatch(/^questions\["huge"\]: its instructions and options take/);

    // OpenAI's door names the question by its position, in the message and in `param`.
    const choices = Object.values(criteria).map((description, i) => ({ value: `o${i}`, description }));
    const openAi = await fetch(`${base}/v1/decisions`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-alpha', input: 'a short state', questions: [{ type: 'predicate', instructions: 'Is it?' }, { type: 'choice', instructions: 'Which?', choices }] }),
    });
    expect(openAi.status).toBe(400);
    const { error } = (await openAi.json()) as { error: { message: string; type: string; param: string | null } };
    expect(error.param).toBe('questions[1]');
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/^questions\[1\]: its instructions and options take \d+ tokens/);
  });

  it('a transfer coding other than chunked (Transfer-Encoding: gzip, chunked): 415 naming it, on decide and batches', async () => {
    const gz = gzipSync(JSON.stringify(decideBody('s', { q: { type: 'noul', instructions: 'Is it?' } })));
    for (const [path, type] of [['/v1/decide', 'application/json'], ['/v1/batches', FORM_TYPE]] as const) {
      for (const coding of ['gzip, chunked', 'deflate,chunked']) {
        const head = post(path, { 'Content-Type': type, 'Transfer-Encoding': coding }, '').replace('Content-Length: 0\r\n', '');
        const res = await rawRequest(Buffer.concat([Buffer.from(`${head}${gz.length.toString(16)}\r\n`), gz, Buffer.from('\r\n0\r\n\r\n')]));
        const message = expectError(res, 415, 'invalid_question');
        expect(message).toBe(`request body: Transfer-Encoding '${coding}' is not supported; send the body uncompressed, chunked or with a Content-Length`);
      }
    }
  });

  it('a Content-Encoding body: 415 naming the encoding, on decide and batches', async () => {
    for (const [path, type] of [['/v1/decide', 'application/json'], ['/v1/batches', FORM_TYPE]] as const) {
      for (const encoding of ['gzip', 'br', 'deflate, gzip']) {
        const res = await rawRequest(post(path, { 'Content-Type': type, 'Content-Encoding': encoding }, '\x1f\x8b\x08\x00'));
        const message = expectError(res, 415, 'invalid_question');
        expect(message).toBe(`request body: Content-Encoding '${encoding}' is not supported; send the body uncompressed`);
      }
    }
    const identity = await decide(JSON.stringify(decideBody('s', { q: { type: 'noul', instructions: 'Is it?' } })), { 'content-encoding': 'identity' });
    expect(identity.status).toBe(200);
    // Without a body the header means nothing: probes and reads are answered.
    for (const path of ['/healthz', '/readyz', '/metrics', '/v1/models']) {
      const res = await fetch(`${base}${path}`, { headers: { ...AUTH, 'content-encoding': 'gzip' } });
      expect(res.status, path).toBe(200);
    }
  });

  it('the batch form: a file sent as a text field, and no Content-Type, get messages that say what to send', async () => {
    const boundary = 'b0undary';
    const form = [`--${boundary}`, 'Content-Disposition: form-data; name="model"', '', 'svc-alpha', `--${boundary}`, 'Content-Disposition: form-data; name="file"', '', '{"custom_id":"a"}', `--${boundary}--`, ''].join('\r\n');
    const text = await rawRequest(post('/v1/batches', { 'Content-Type': `multipart/form-data; boundary=${boundary}` }, form));
    expect(expectError(text, 400, 'invalid_question')).toBe("form field 'file': must be a file part with a filename (the JSONL file, as curl -F file=@input.jsonl sends it), got a text field");
    const untyped = await rawRequest(post('/v1/batches', {}, 'model=svc-alpha'));
    expect(expectError(untyped, 400, 'invalid_question')).toBe('request body: Content-Type header missing; send multipart/form-data or application/json');
    const openAiJsonAsText = JSON.stringify({ input_file_id: 'file-x', endpoint: '/v1/decide', completion_window: '24h' });
    const asText = await rawRequest(post('/v1/batches', { 'Content-Type': 'text/plain' }, openAiJsonAsText));
    expect(expectError(asText, 400, 'invalid_question')).toBe("request body: Content-Type 'text/plain' is not supported; send multipart/form-data or application/json");
    const decideUntyped = await rawRequest(post('/v1/decide', {}, '{}'));
    expect(expectError(decideUntyped, 400, 'invalid_question')).toBe('request body: Content-Type header missing; send application/json');
  });
});

describe('HTTP without a Host header', () => {
  it('is answered as any request: errors in the API shape with a request id', async () => {
    const res = await rawRequest(`GET /v1/models/nope HTTP/1.1\r\nAuthorization: Bearer ${TEST_KEY}\r\nConnection: close\r\n\r\n`);
    expectError(res, 404, 'not_found');
    const health = await rawRequest('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(health?.status).toBe(200);
  });
});

describe('an absolute-form request target (POST http://host/v1/decide, as a forward proxy sends it)', () => {
  it('is the door its path names: a decision with its dec_ id, and a System One error with its own id', async () => {
    const decided = await rawRequest(post(`http://127.0.0.1:${port}/v1/decide`, { 'Content-Type': 'application/json' }, JSON.stringify(decideBody('a state'))));
    expect(decided?.status).toBe(200);
    const body = JSON.parse(decided!.body);
    expect(body.id).toMatch(/^dec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decided!.headers['x-request-id']).toBe(body.id);
    const refused = await rawRequest(post(`http://127.0.0.1:${port}/v1/systemone?x=1`, { 'Content-Type': 'application/json' }, '{}'));
    expect(refused?.status).toBe(422);
    expect(refused!.headers['x-typesafe-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
  });
});

describe('keys', () => {
  it('two Authorization headers are 401 invalid_key, even when both hold the good key', async () => {
    const request = `GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_KEY}\r\nAuthorization: Bearer ${TEST_KEY}\r\nConnection: close\r\n\r\n`;
    const res = await rawRequest(request);
    expect(expectError(res, 401, 'invalid_key')).toMatch(/more than one Authorization header/);
    expect(res!.headers['www-authenticate']).toBe('Bearer');
  });

  it('the query string is not logged: a key put there stays out of the log', async () => {
    const res = await fetch(`${base}/v1/batches?limit=5&api_key=${TEST_KEY}QUERYSECRET`, { headers: AUTH });
    expect(res.status).toBe(200);
    const log = logOf(res.headers.get('x-request-id')!);
    expect(log.length).toBeGreaterThan(0);
    expect(JSON.stringify(log)).not.toContain('QUERYSECRET');
    expect(log.find((l) => l.msg === 'incoming request')).toMatchObject({ req: { url: '/v1/batches?[redacted]' } });
    const completed = await logLine(0, (l) => l.request_id === res.headers.get('x-request-id') && l.msg === 'request completed');
    expect(completed).toMatchObject({ req: { method: 'GET', url: '/v1/batches?[redacted]' }, res: { statusCode: 200 } });
    expect(JSON.stringify(completed)).not.toContain('QUERYSECRET');
  });

  it.each([
    ['credentials in an absolute-form target', 'http://admin:URLSECRET@127.0.0.1/v1/models', '/v1/models'],
    ['a fragment', '/v1/models#URLSECRET', '/v1/models#[redacted]'],
    ['a path parameter', '/v1/models;key=URLSECRET', '/v1/models;[redacted]'],
  ])('%s is not logged either: the line has the path only', async (_what, target, logged) => {
    const res = await rawRequest(`GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.authorization}\r\nConnection: close\r\n\r\n`);
    const id = res!.headers['x-request-id']!;
    const completed = await logLine(0, (l) => l.request_id === id && l.msg === 'request completed');
    expect(logOf(id).find((l) => l.msg === 'incoming request')).toMatchObject({ req: { url: logged } });
    expect(completed).toMatchObject({ req: { url: logged } });
    expect(JSON.stringify(logOf(id))).not.toContain('URLSECRET');
  });

  it('the query string is not echoed in a 404 or 405 message either, on any door: the message quotes the path', async () => {
    const q = '?api_key=QUERYSECRET&x=1';
    const cases: Array<[string, string, number, string]> = [
      ['GET', '/v1/x', 404, 'no route GET /v1/x'],
      ['POST', '/v1/batches/abc/def', 404, 'no route POST /v1/batches/abc/def'],
      ['OPTIONS', '/v1/models', 404, 'no route OPTIONS /v1/models'],
      ['GET', '/v1/decisions/x', 404, 'Invalid URL (GET /v1/decisions/x)'],
      ['PUT', '/v1/decisions', 405, 'Invalid URL (PUT /v1/decisions)'],
      ['PUT', '/v1/files', 405, 'Invalid URL (PUT /v1/files)'],
      ['GET', '/v1/files/file-x/other', 404, 'Invalid URL (GET /v1/files/file-x/other)'],
      ['GET', '/v1/systemone/x', 404, 'Not Found'],
      ['GET', '/v1/decide', 405, 'GET /v1/decide: /v1/decide takes POST only'],
      ['POST', '/v1/decide/x', 404, 'no route POST /v1/decide/x'],
      // A long path is cut at 200 characters, as before.
      ['GET', `/v1/${'y'.repeat(300)}`, 404, `no route GET /v1/${'y'.repeat(196)}...`],
    ];
    for (const [method, p, status, message] of cases) {
      const res = await fetch(`${base}${p}${q}`, { method, headers: AUTH });
      const text = await res.text();
      expect(res.status, p).toBe(status);
      expect(text, p).not.toContain('QUERYSECRET');
      expect(text, p).not.toContain('x=1');
      expect(text, p).toContain(message);
    }
  });

  it('another method on /v1/decide: 405 with Allow: POST in our shape, after authentication', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${base}/v1/decide`, { method, headers: AUTH });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow'), method).toBe('POST');
      const body = (await res.json()) as Record<string, unknown>;
      expect(body, method).toEqual({ code: 'invalid_question', message: `${method} /v1/decide: /v1/decide takes POST only`, request_id: res.headers.get('x-request-id') });
      expect((await fetch(`${base}/v1/decide`, { method })).status, method).toBe(401);
    }
  });

  it('failed attempts are limited per client address: 429 with Retry-After, then even a good key waits', async () => {
    await withLimitedServer(async (root) => {
      const url = `${root}/v1/models`;
      expect((await fetch(url, { headers: AUTH })).status).toBe(200);
      const statuses: number[] = [];
      for (const authorization of ['Bearer guess-1', 'Bearer guess-2', 'Basic eA==', 'Bearer guess-4']) {
        statuses.push((await fetch(url, { headers: { authorization } })).status);
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
      const good = await fetch(url, { headers: AUTH });
      expect(good.status).toBe(429);
      expect(Number(good.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expectErrorShape(await good.json(), 'rate_limited', good.headers.get('x-request-id')!);
      // Probes are never limited.
      expect((await fetch(`${root}/healthz`)).status).toBe(200);
    });
  });

  it('a request with no Authorization header guesses nothing: refused, never counted (a page on another site can make a browser send it)', async () => {
    await withLimitedServer(async (root) => {
      // What an <img> or a no-cors fetch from another site sends: no key, a foreign Referer.
      const crossSite = { referer: 'https://evil.example/', 'sec-fetch-site': 'cross-site', accept: 'image/avif,image/webp,*/*' };
      for (let i = 0; i < 10; i++) {
        for (const p of ['/v1/models', '/v1/x', '/', '/favicon.ico']) expect((await fetch(`${root}${p}`, { headers: crossSite })).status, p).toBe(401);
        expect((await fetch(`${root}/v1/systemone`, { method: 'POST', headers: crossSite })).status).toBe(403);
      }
      expect((await fetch(`${root}/v1/models`, { headers: AUTH })).status).toBe(200);
      // A wrong key, a malformed header or an empty one still counts: the burst of 3 is spent.
      for (const authorization of ['Bearer guess-1', 'Basic eA==', '']) {
        expect((await fetch(`${root}/v1/models`, { headers: { authorization } })).status, authorization).toBe(401);
      }
      const keyless = await fetch(`${root}/v1/models`, { headers: crossSite });
      expect(keyless.status).toBe(429);
      expect((await fetch(`${root}/v1/models`, { headers: AUTH })).status).toBe(429);
    });
  });
});

describe('OPTIONS (a browser\'s CORS preflight): no CORS, no key needed, never a failed authentication', () => {
  it('many preflights from one address, then a keyed request is still answered', async () => {
    await withLimitedServer(async (root) => {
      const preflight = { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' };
      for (let i = 0; i < 10; i++) {
        // 405 with Allow where the path answers other methods itself, else the API's 404.
        for (const [p, status] of [['/v1/decide', 405], ['/healthz', 404], ['/v1/models', 404], ['/v1/files', 405], ['/v1/decisions', 405], ['/v1/systemone', 405]] as const) {
          const res = await fetch(`${root}${p}`, { method: 'OPTIONS', headers: preflight });
          expect(res.status, p).toBe(status);
          expect([...res.headers.keys()].filter((h) => h.startsWith('access-control-')), p).toEqual([]);
        }
      }
      expect((await fetch(`${root}/v1/models`, { headers: AUTH })).status).toBe(200);
    });
  });

  it('with a body (a preflight has none): answered the same, the body neither parsed nor held to the limit, and the connection goes on', async () => {
    // Past the 1 MiB body limit: read, it would be a 413; parsed, a 400.
    const big = `{${'"k":0,'.repeat(200_000)}"k":0}`;
    const chunked = (body: string) => `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const sized = (body: string) => `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    // [path, status, the key of the door's error body, Allow]
    const doors = [
      ['/v1/decide', 405, 'code', 'POST'],
      ['/v1/decisions', 405, 'error', 'POST'],
      ['/v1/systemone', 405, 'detail', 'POST'],
      ['/v1/files/file-x', 405, 'error', 'GET, DELETE'],
      ['/v1/anything', 404, 'code', undefined],
    ] as const;
    for (const [p, status, shape, allow] of doors) {
      for (const [what, body] of [['bad JSON', sized('{bad json')], ['over the limit', sized(big)], ['chunked', chunked('{bad json')]] as const) {
        const conn = new KeptAlive();
        try {
          conn.send(`OPTIONS ${p} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${body}`);
          const res = await conn.next();
          expect(res?.status, `${p} ${what}`).toBe(status);
          expect(Object.keys(JSON.parse(res!.body)), `${p} ${what}`).toContain(shape);
          expect(res!.headers.allow, `${p} ${what}`).toBe(allow);
          conn.send(`GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`);
          expect((await conn.next())?.status, `${p} ${what}: the next request`).toBe(200);
        } finally {
          conn.close();
        }
      }
    }
  });
});

/**
 * Runs `fn` against a second server whose failed authentications are limited to a burst of 3 per
 * address (the main one's limits are off), on its own data dir (a batch data dir has one owner).
 */
async function withLimitedServer(fn: (root: string) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'limited-data-'));
  const limited = await createServer({
    service,
    apiKeys: [TEST_KEY],
    dataDir,
    rateLimit: { requestsPerSecond: 100, burst: 100, invalidKeys: { requestsPerSecond: 0.01, burst: 3 } },
  });
  try {
    await limited.listen({ port: 0, host: '127.0.0.1' });
    await fn(`http://127.0.0.1:${(limited.server.address() as net.AddressInfo).port}`);
  } finally {
    await limited.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * One kept-alive connection read as a client reads it: send() writes bytes as they are, next()
 * returns the next whole response (Content-Length bodies) or null when the server closed the
 * connection, and fails after `waitMs` without either (a connection left hanging).
 */
class KeptAlive {
  private readonly socket: net.Socket;
  private data = Buffer.alloc(0);
  private closed = false;
  private wake: (() => void) | undefined;

  constructor() {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (piece: Buffer) => {
      this.data = Buffer.concat([this.data, piece]);
      this.wake?.();
    });
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  async next(waitMs = 5000): Promise<RawResponse | null> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const res = this.take();
      if (res) return res;
      if (this.closed) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response and the connection still open after ${waitMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private take(): RawResponse | undefined {
    const end = this.data.indexOf('\r\n\r\n');
    if (end === -1) return undefined;
    const [statusLine, ...headerLines] = this.data.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const h of headerLines) {
      const i = h.indexOf(':');
      headers[h.slice(0, i).toLowerCase()] = h.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (this.data.length < end + 4 + length) return undefined;
    const body = this.data.subarray(end + 4, end + 4 + length).toString('utf8');
    this.data = this.data.subarray(end + 4 + length);
    return { status: Number(statusLine!.split(' ')[1]), headers, body };
  }
}

/** A request as post() writes it, without Connection: close. */
function keptAlivePost(path: string, headers: Record<string, string>, body: string): string {
  return post(path, headers, body).replace('Connection: close\r\n', '');
}

describe('one kept-alive connection, several requests', () => {
  it('a form refused at its first wrong field, its file still arriving: the 400, then the next request on the connection is answered', async () => {
    // The file part is far larger than the socket buffers: refused before it is read, it must be
    // read and dropped for the connection to carry the next request.
    const file = `${RECORD}\n`.repeat(Math.ceil((2 * 1024 * 1024) / (RECORD.length + 1)));
    for (const [route, extra] of [
      ['/v1/files', { name: 'bogus', value: '1' }],
      ['/v1/batches', { name: 'bogus', value: '1' }],
    ] as const) {
      const conn = new KeptAlive();
      try {
        conn.send(keptAlivePost(route, { 'Content-Type': FORM_TYPE }, form([extra, { name: 'file', value: file, filename: 'in.jsonl' }])));
        const refused = await conn.next();
        expect(refused?.status, route).toBe(400);
        expect(refused!.body, route).toMatch(/form field 'bogus': unknown/);
        conn.send('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
        expect((await conn.next())?.status, route).toBe(200);
      } finally {
        conn.close();
      }
    }
  });
});

describe('a malformed request pipelined behind good ones', () => {
  it('five good ones ahead of it: each answered, in order, then the error', async () => {
    const decide = (state: string) => keptAlivePost('/v1/decide', { 'Content-Type': 'application/json' }, JSON.stringify(decideBody(state)));
    const health = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
    const conn = new KeptAlive();
    try {
      conn.send(decide('first') + health + decide('second') + decide('third') + health + 'GARBAGE\r\n\r\n');
      const statuses: number[] = [];
      const kinds: string[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await conn.next(20_000);
        statuses.push(res?.status ?? 0);
        const body = res ? JSON.parse(res.body) : {};
        kinds.push(body.answers ? 'answers' : body.status === 'ok' ? 'health' : String(body.code));
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 400]);
      expect(kinds).toEqual(['answers', 'health', 'answers', 'answers', 'health', 'invalid_question']);
      expect(await conn.next()).toBeNull();
    } finally {
      conn.close();
    }
  });

  it('a body that is not JSON (read whole) is its 400 and the connection stays: the request behind it is answered', async () => {
    const good = keptAlivePost('/v1/decide', { 'Content-Type': 'application/json' }, JSON.stringify(decideBody('a state')));
    for (const [path, bad, status] of [
      ['/v1/decide', '{x}', 400],
      ['/v1/decide', '{"a":1,"a":2}', 400],
      ['/v1/decide', '', 400],
      ['/v1/systemone', '{"state":"\\ud800"}', 422],
      ['/v1/decisions', 'nope', 400],
      ['/v1/batches', '{x}', 400],
    ] as const) {
      const conn = new KeptAlive();
      try {
        conn.send(keptAlivePost(path, { 'Content-Type': 'application/json' }, bad) + good);
        const refused = await conn.next(20_000);
        expect(refused?.status, `${path} ${bad}`).toBe(status);
        expect(refused?.headers.connection, `${path} ${bad}`).not.toBe('close');
        const answered = await conn.next(20_000);
        expect(answered?.status, `${path} ${bad}`).toBe(200);
        expect(JSON.parse(answered!.body).answers, `${path} ${bad}`).toBeDefined();
      } finally {
        conn.close();
      }
    }
  });

  it('the good ones are answered first, in order; then the error, and the connection is closed', async () => {
    const decide = keptAlivePost('/v1/decide', { 'Content-Type': 'application/json' }, JSON.stringify(decideBody('a state')));
    const health = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
    const bigHeader = `GET /v1/models HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    for (const [what, bad, status] of [
      ['garbage', 'GARBAGE\r\n\r\n', 400],
      ['headers over the limit', bigHeader, 431],
    ] as const) {
      const conn = new KeptAlive();
      try {
        conn.send(decide + health + bad);
        const first = await conn.next();
        expect(first?.status, what).toBe(200);
        expect(JSON.parse(first!.body).answers, what).toBeDefined();
        const second = await conn.next();
        expect(second?.status, what).toBe(200);
        expect(JSON.parse(second!.body), what).toEqual({ status: 'ok' });
        const third = await conn.next();
        expect(third?.status, what).toBe(status);
        expect(JSON.parse(third!.body).code, what).toBe('invalid_question');
        expect(await conn.next(), what).toBeNull();
      } finally {
        conn.close();
      }
    }
  });
});

describe('errors in HTTP itself, on the foreign doors', () => {
  const TYPESAFE_ID = /^req_[0-9a-f]{32}$/;
  const request = (line: string, header: string) => `${line} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_KEY}\r\n${header}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
  const big = `X-Big: ${'a'.repeat(20_000)}`;

  it("headers over the limit, a malformed header or URL: System One's detail shape with its request id, OpenAI's {error}, ours elsewhere", async () => {
    for (const [line, header, status] of [
      ['POST /v1/systemone', big, 431],
      ['POST /v1/systemone', 'Bad Header: 1', 400],
      ['POST /v1/systemone/%zz', 'X-Ok: 1', 400],
    ] as const) {
      const res = await rawRequest(request(line, header));
      expect(res?.status, line).toBe(status);
      expect(JSON.parse(res!.body), line).toEqual({ detail: { error_type: 'api_usage_error', message: expect.any(String) } });
      expect(res!.headers['x-typesafe-request-id'], line).toMatch(TYPESAFE_ID);
      expect(res!.headers['x-request-id'], line).toBe(res!.headers['x-typesafe-request-id']);
    }
    for (const [line, header, status] of [
      ['POST /v1/decisions', big, 431],
      ['POST /v1/decisions', 'Bad Header: 1', 400],
      ['POST /v1/decisions/%zz', 'X-Ok: 1', 400],
      ['GET /v1/files', big, 431],
      ['GET /v1/files?limit=1', 'Bad Header: 1', 400],
    ] as const) {
      const res = await rawRequest(request(line, header));
      expect(res?.status, line).toBe(status);
      expect(Object.keys(JSON.parse(res!.body)), line).toEqual(['error']);
      expect(JSON.parse(res!.body).error, line).toMatchObject({ type: 'invalid_request_error' });
      expect(res!.headers['x-request-id'], line).toMatch(/^req_/);
    }
    const ours = await rawRequest(request('POST /v1/decide', big));
    expectError(ours, 431, 'invalid_question');
    // Logged as every other 4xx, by its request id, the path without what follows a ';'.
    const malformed = await rawRequest(request('GET /v1/models;session=SECRET', 'Bad Header: 1'));
    for (const [res, status, url] of [[ours, 431, '/v1/decide'], [malformed, 400, '/v1/models;[redacted]']] as const) {
      const rejected = await logLine(0, (l) => l.request_id === res!.headers['x-request-id'] && l.msg === 'request rejected');
      expect(rejected).toMatchObject({ code: 'invalid_question', status, req: { url } });
    }
  });
});

describe('a request whose body has not arrived when its time runs out', () => {
  it("gets its 408 in the door's shape, its connection then closed (not a bare close)", async () => {
    // Node reports a late request as a clientError with code ERR_HTTP_REQUEST_TIMEOUT (after 300 s
    // here); the test sends that report for a connection whose request is waiting on its body.
    const sockets: net.Socket[] = [];
    const onConnection = (s: net.Socket) => sockets.push(s);
    app.server.on('connection', onConnection);
    try {
      for (const [path, check] of [
        ['/v1/systemone', (body: any) => expect(body).toEqual({ detail: { error_type: 'api_usage_error', message: 'request timed out' } })],
        ['/v1/decisions', (body: any) => expect(body.error).toMatchObject({ type: 'invalid_request_error', message: 'request timed out' })],
        ['/v1/decide', (body: any) => expect(body).toMatchObject({ code: 'invalid_question', message: 'request timed out' })],
      ] as const) {
        const client = net.connect(port, '127.0.0.1');
        let data = '';
        client.setEncoding('latin1');
        client.on('data', (piece: string) => (data += piece));
        const closed = new Promise((resolve) => client.on('close', resolve));
        client.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
        // The server has the request (its response object exists) and waits for the body.
        let server: (net.Socket & { _httpMessage?: unknown }) | undefined;
        for (let i = 0; i < 500 && !server; i++) {
          server = sockets.find((s) => (s as { _httpMessage?: unknown })._httpMessage) as typeof server;
          if (!server) await new Promise((r) => setTimeout(r, 5));
        }
        expect(server, path).toBeDefined();
        app.server.emit('clientError', Object.assign(new Error('request timed out'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), server);
        await closed;
        expect(data, path).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
        check(JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)));
        sockets.length = 0;
      }
    } finally {
      app.server.off('connection', onConnection);
    }
  });
});

describe('a decision whose client leaves before its answer', () => {
  it.each([
    ['closes the connection', false],
    ['half-closes it (ends its sending side)', true],
  ] as const)('%s: logged with method, path and status 499, and counted under 499 in /metrics', async (_what, halfClose) => {
    const count = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Number(/^decide_http_requests_total\{method="POST",route="\/v1\/decide",status="499"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const before = await count();
    const from = logLines.length;
    const questions = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Is point ${i} of ${halfClose} true?` }]));
    const body = JSON.stringify(decideBody(`${'a long state to score for a while '.repeat(200)}${halfClose}`, questions));
    const request = post('/v1/decide', { 'Content-Type': 'application/json' }, body);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(request);
        if (halfClose) socket.end();
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve());
      // Gone while its request is tokenized or scored.
      if (!halfClose) setTimeout(() => socket.destroy(), 100);
      setTimeout(() => reject(new Error('the server kept the connection open')), 30_000);
    });
    const incoming = await logLine(from, (l) => l.msg === 'incoming request' && (l.req as { url?: string })?.url === '/v1/decide');
    const abandoned = await logLine(from, (l) => l.request_id === incoming.request_id && l.msg !== 'incoming request');
    expect(abandoned).toMatchObject({ level: 30, msg: 'request abandoned: the client closed the connection before its answer', status: 499, req: { method: 'POST', url: '/v1/decide' } });
    expect(await count()).toBe(before + 1);
  });
});
