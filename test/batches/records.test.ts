/**
 * Batch input records without the engine: line reading (offsets, blank lines, BOM, CRLF, long
 * lines), the upload record counter agreeing with the reader, and record parsing/validation.
 */
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { claimCustomId, parseRecord, type RecordContext } from '../../src/batches/records.js';
import { readLines, RecordCounter, type RawLine } from '../../src/batches/jsonl-lines.js';
import { parseEndpointLine } from '../../src/batches/openai/lines.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'batch-records-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function linesOf(content: Buffer | string, options: { from?: number; firstLineNo?: number; maxLineBytes?: number; chunkBytes?: number } = {}) {
  const file = path.join(dir, `f-${Math.random().toString(36).slice(2)}`);
  await writeFile(file, content);
  const fh = await open(file, 'r');
  try {
    const out: RawLine[] = [];
    for await (const line of readLines(fh, options)) out.push(line);
    return out;
  } finally {
    await fh.close();
  }
}

function line(text: string, lineNo = 1): RawLine {
  const bytes = Buffer.from(text);
  return { start: 0, end: bytes.length + 1, lineNo, bytes, length: bytes.length, blank: text.trim() === '' };
}

const Q = { q: { type: 'noul', instructions: 'Is it?' } };
function ctx(extra: Partial<RecordContext> = {}): RecordContext {
  return { model: 'svc-alpha-2026-10', requestedModel: 'svc-alpha', seen: new Map(), ...extra };
}

describe('readLines', () => {
  it('gives every line with exact byte offsets, blank lines flagged, CR stripped, last line without newline', async () => {
    const text = 'a\n\n  \t\r\n{"x":1}\r\nlast';
    const lines = await linesOf(text, { chunkBytes: 3 });
    expect(lines.map((l) => [l.start, l.end, l.lineNo, l.bytes?.toString(), l.blank])).toEqual([
      [0, 2, 1, 'a', false],
      [2, 3, 2, '', true],
      [3, 8, 3, '  \t', true],
      [8, 17, 4, '{"x":1}', false],
      [17, 21, 5, 'last', false],
    ]);
    // Resuming at a line start gives the same lines from there.
    const tail = await linesOf(text, { from: 8, firstLineNo: 4, chunkBytes: 5 });
    expect(tail.map((l) => [l.start, l.lineNo, l.bytes?.toString()])).toEqual([
      [8, 4, '{"x":1}'],
      [17, 5, 'last'],
    ]);
  });

  it('skips a byte order mark at the start of the file only', async () => {
    const lines = await linesOf(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}\n\ufeffx\n')]));
    expect(lines[0]!.bytes!.toString()).toBe('{"a":1}');
    expect(lines[1]!.bytes!.toString()).toBe('\ufeffx');
  });

  it('never holds an over-long line: bytes null, length kept, next line intact', async () => {
    const long = 'y'.repeat(5000);
    const lines = await linesOf(`${long}\nok\n${' '.repeat(3000)}\n`, { maxLineBytes: 1000, chunkBytes: 256 });
    expect(lines.map((l) => [l.bytes === null ? null : l.bytes.toString(), l.length, l.blank])).toEqual([
      [null, 5000, false],
      ['ok', 2, false],
      [null, 3000, true],
    ]);
  });

  it('does not count a CRLF ending against the record limit: a record of exactly the limit passes either way', async () => {
    const at = '{"s":"' + 'y'.repeat(992) + '"}'; // 1000 bytes
    const over = at.replace('"}', ' "}');
    for (const eol of ['\n', '\r\n']) {
      // Pieces of 7 bytes split some CRLFs between two pieces.
      const lines = await linesOf(`${at}${eol}${over}${eol}${at}`, { maxLineBytes: 1000, chunkBytes: 7 });
      expect(lines.map((l) => [l.bytes?.toString() ?? null, l.length])).toEqual([
        [at, 1000],
        [null, 1001],
        [at, 1000],
      ]);
    }
    const lastCr = await linesOf(`${at}\r`, { maxLineBytes: 1000 });
    expect(lastCr.map((l) => [l.bytes?.toString() ?? null, l.length])).toEqual([[at, 1000]]);
  });
});

describe('RecordCounter', () => {
  it('counts exactly the non-blank lines readLines() gives, for random content split at random places', async () => {
    let seed = 42;
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const pieces = ['{"a":1}', '', ' ', '\t', '\r', 'x', '\ufeff', '  z  '];
    for (let trial = 0; trial < 200; trial++) {
      const parts: string[] = [];
      const n = Math.floor(rand() * 8);
      for (let i = 0; i < n; i++) parts.push(pieces[Math.floor(rand() * pieces.length)]!);
      let text = parts.join('\n');
      if (rand() < 0.5) text += '\n';
      if (rand() < 0.3) text = `\ufeff${text}`;
      const buf = Buffer.from(text);
      const counter = new RecordCounter();
      let at = 0;
      while (at < buf.length) {
        const step = 1 + Math.floor(rand() * 4);
        counter.push(buf.subarray(at, at + step));
        at += step;
      }
      const lines = await linesOf(buf);
      expect(counter.total(), JSON.stringify(text)).toBe(lines.filter((l) => !l.blank).length);
      expect(counter.bytes).toBe(buf.length);
    }
  });
});

describe('parseRecord', () => {
  it('accepts the plain form and the OpenAI-style envelope, with the same normalized request', () => {
    const plain = parseRecord(line(JSON.stringify({ custom_id: 'a', state: { t: 'x' }, questions: Q })), ctx());
    const envelope = parseRecord(
      line(JSON.stringify({ custom_id: 'b', method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: { t: 'x' }, questions: Q } })),
      ctx(),
    );
    expect(plain.ok && envelope.ok).toBe(true);
    if (!plain.ok || !envelope.ok) return;
    expect(plain.request).toEqual(envelope.request);
    expect(plain.request.stateText).toBe('{"t":"x"}');
    expect(plain.request.model).toBe('svc-alpha-2026-10');
  });

  it('takes 255 options per question in every dialect\'s lines; 256 fails in that dialect\'s own shape', () => {
    const criteria = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`o${i}`, `option ${i}`]));
    const decideLine = (n: number) => parseRecord(line(JSON.stringify({ custom_id: `d${n}`, state: 's', questions: { q: { type: 'choice', instructions: 'Which?', criteria: criteria(n) } } })), ctx());
    const ok = decideLine(255);
    expect(ok.ok && ok.request.questions[0]!.options).toHaveLength(255);
    const refused = decideLine(256);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error).toMatchObject({ code: 'invalid_question', message: expect.stringMatching(/must have 2 to 255 options, got 256/) });

    const bodies = {
      '/v1/systemone': (n: number) => ({ model: 'svc-alpha', state: 's', questions: { q: { type: 'choice', instructions: 'Which?', criteria: criteria(n) } } }),
      '/v1/decisions': (n: number) => ({ model: 'svc-alpha', input: 's', questions: [{ type: 'choice', instructions: 'Which?', choices: Array.from({ length: n }, (_, i) => ({ value: `v${i}` })) }] }),
    };
    const errorRow = {
      '/v1/systemone': { detail: 'Too many choices. Must have at most 255 choices.' },
      '/v1/decisions': { error: { param: 'questions[0].choices', message: 'questions[0].choices: at most 255 choices per question, got 256' } },
    };
    for (const [endpoint, body] of Object.entries(bodies)) {
      const parse = (n: number) =>
        parseEndpointLine(line(JSON.stringify({ custom_id: `c${n}`, method: 'POST', url: endpoint, body: body(n) })), { ...ctx(), endpoint });
      const accepted = parse(255);
      expect('request' in accepted && accepted.request!.questions[0]!.options, endpoint).toHaveLength(255);
      // A refused line's row is its endpoint's error, whatever the scoring outcome would have been.
      const refusedLine = parse(256);
      expect(refusedLine.request).toBeUndefined();
      const row = JSON.parse(refusedLine.format({ ok: false, error: refusedLine.error! })) as { response: { status_code: number; body: unknown } };
      expect(row.response.status_code, endpoint).toBe(400);
      expect(row.response.body, endpoint).toMatchObject(errorRow[endpoint as keyof typeof errorRow]);
    }
  });

  it("accepts a line naming the batch's model by its dated id or its alias, whichever spelling created the batch, and refuses any other", () => {
    const dated = 'svc-alpha-2026-10';
    const decisions = (model: string) => ({ model, input: 's', questions: [{ type: 'choice', instructions: 'Which?', choices: [{ value: 'a' }, { value: 'b' }] }] });
    for (const requestedModel of [dated, 'svc-alpha']) {
      for (const [model, accepted] of [[dated, true], ['svc-alpha', true], ['svc-alpha-2026-11', false], ['svc-beta', false], ['svc', false]] as const) {
        const c = ctx({ model: dated, requestedModel });
        const ours = parseRecord(line(JSON.stringify({ custom_id: 'a', state: 's', questions: Q, model })), c);
        expect(ours.ok, `${requestedModel} / ${model}`).toBe(accepted);
        if (!ours.ok) expect(ours.error.message).toMatch(/differs from the batch's model/);
        if (ours.ok) expect(ours.request.model).toBe(dated);
        const theirs = parseEndpointLine(line(JSON.stringify({ custom_id: 'b', method: 'POST', url: '/v1/decisions', body: decisions(model) })), { ...c, endpoint: '/v1/decisions' });
        expect(theirs.request?.model, `${requestedModel} / ${model}`).toBe(accepted ? dated : undefined);
      }
    }
  });

  it('applies the form questions only to records without their own', () => {
    const form = { f: { type: 'choice', instructions: 'Which?', criteria: { a: 'A', b: 'B' } } };
    const own = parseRecord(line(JSON.stringify({ custom_id: 'a', state: 's', questions: Q })), ctx({ formQuestions: form }));
    const none = parseRecord(line(JSON.stringify({ custom_id: 'b', state: 's' })), ctx({ formQuestions: form }));
    expect(own.ok && own.request.questions.map((q) => q.id)).toEqual(['q']);
    expect(none.ok && none.request.questions.map((q) => q.id)).toEqual(['f']);
    const missing = parseRecord(line(JSON.stringify({ custom_id: 'c', state: 's' })), ctx());
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.error.message).toMatch(/^questions: required/);
  });

  it('gives failed rows with the /v1/decide codes; custom_id null and the line number when unreadable', () => {
    const c = ctx();
    const cases: Array<[string, string | null, string, RegExp]> = [
      ['not json', null, 'invalid_question', /^line 1: not valid JSON \(at column 1\)$/],
      ['[1,2]', null, 'invalid_question', /must be a JSON object, got array/],
      [JSON.stringify({ state: 's', questions: Q }), null, 'invalid_question', /^line 1: custom_id: required/],
      [JSON.stringify({ custom_id: 7, state: 's', questions: Q }), null, 'invalid_question', /^line 1: custom_id: .*got number/],
      [JSON.stringify({ custom_id: '', state: 's', questions: Q }), null, 'invalid_question', /^line 1: custom_id: .*empty string/],
      [JSON.stringify({ custom_id: 'x'.repeat(257), state: 's', questions: Q }), null, 'invalid_question', /^line 1: custom_id: .*more than 256/],
      // JSON.parse would keep the last value of a repeated key: the record is refused instead, and
      // names its row by its custom_id unless the fault is in the custom_id itself.
      ['{"custom_id": "d1", "state": "s", "questions": {"q": {"type": "noul", "instructions": "A?"}, "q": {"type": "noul", "instructions": "B?"}}}', 'd1', 'invalid_question', /^line 1: duplicate key "q" in questions/],
      ['{"custom_id": "d4", "state": "s", "state": "t", "questions": {}}', 'd4', 'invalid_question', /^line 1: duplicate key "state"/],
      ['{"custom_id": "d5", "state": "s\\ud800", "questions": {}}', 'd5', 'invalid_question', /^line 1: a string in state holds a lone surrogate/],
      ['{"custom_id": "d6\\udc00", "state": "s", "questions": {}}', null, 'invalid_question', /^line 1: a string in custom_id holds a lone surrogate/],
      ['{"custom_id": "d2", "custom_id": "d3", "state": "s", "questions": {}}', null, 'invalid_question', /^line 1: duplicate key "custom_id"/],
      ['{"custom_id": 8, "state": "s", "state": "t", "questions": {}}', null, 'invalid_question', /^line 1: duplicate key "state"/],
      [`{"custom_id": "s1", "state": "${'SECRET '.repeat(40)}" x}`, null, 'invalid_question', /^line 1: not valid JSON \(at column 313\)$/],
      [JSON.stringify({ custom_id: 'q1', state: 's', questions: { q: { type: 'maybe', instructions: 'x' } } }), 'q1', 'invalid_question', /type: must be one of/],
      [JSON.stringify({ custom_id: 'q2', state: 's', questions: Q, extra: 1 }), 'q2', 'invalid_question', /extra: unknown field/],
      [JSON.stringify({ custom_id: 'q3', state: 's', questions: Q, model: 'other-2026-10' }), 'q3', 'invalid_question', /differs from the batch's model/],
      [JSON.stringify({ custom_id: 'q4', method: 'GET', url: '/v1/decide', body: {} }), 'q4', 'invalid_question', /^method: must be "POST"/],
      [JSON.stringify({ custom_id: 'q5', method: 'POST', url: '/v1/decide', body: { state: 's', questions: {} } }), 'q5', 'invalid_question', /^body\.questions: must contain at least 1/],
    ];
    for (const [text, customId, code, message] of cases) {
      const r = parseRecord(line(text), c);
      expect(r.ok, text).toBe(false);
      if (r.ok) continue;
      expect([r.customId, r.error.code], text).toEqual([customId, code]);
      expect(r.error.message, text).toMatch(message);
    }
    const invalidUtf8: RawLine = { start: 0, end: 3, lineNo: 9, bytes: Buffer.from([0x7b, 0xff, 0x7d]), length: 3, blank: false };
    const bad = parseRecord(invalidUtf8, c);
    expect(!bad.ok && [bad.customId, bad.error.code, bad.error.message]).toEqual([null, 'invalid_question', 'line 9: not valid UTF-8 (the input must be UTF-8 JSONL)']);
    const tooLong: RawLine = { start: 0, end: 3, lineNo: 4, bytes: null, length: 2_000_000, blank: false };
    const long = parseRecord(tooLong, c);
    expect(!long.ok && [long.customId, long.error.code]).toEqual([null, 'state_too_long']);
  });

  it('fails a later duplicate custom_id (the first use claims it even when it fails) and claimCustomId() rebuilds the same set', () => {
    const lines = [
      line(JSON.stringify({ custom_id: 'a', state: 's', questions: { q: { type: 'bad' } } }), 1),
      line(JSON.stringify({ custom_id: 'b', state: 's', questions: Q }), 2),
      line(JSON.stringify({ custom_id: 'a', state: 's', questions: Q }), 3),
      line('garbage', 4),
      line(JSON.stringify({ custom_id: 'b', state: 's', questions: Q }), 5),
      line('{"custom_id": "c", "state": "s", "questions": {"q": {"type": "choice", "instructions": "A?", "criteria": {"x": "", "x": ""}}}}', 6),
      line(JSON.stringify({ custom_id: 'c', state: 's', questions: Q }), 7),
    ];
    const c = ctx();
    const results = lines.map((l) => parseRecord(l, c));
    expect(results.map((r) => r.ok)).toEqual([false, true, false, false, false, false, false]);
    expect(results.slice(5).map((r) => !r.ok && [r.customId, r.error.message])).toEqual([
      ['c', 'line 6: duplicate key "x" in questions.q.criteria; each key may appear once'],
      ['c', 'custom_id: "c" is a duplicate of line 6; custom_id must be unique within the file'],
    ]);
    const dup = results[2]!;
    expect(!dup.ok && [dup.customId, dup.error.message]).toEqual(['a', 'custom_id: "a" is a duplicate of line 1; custom_id must be unique within the file']);
    const rebuilt = new Map<string, number>();
    for (const l of lines) claimCustomId(l, rebuilt);
    expect(rebuilt).toEqual(c.seen);
  });
});
