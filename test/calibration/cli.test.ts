// `decide calibrate` end to end through the CLI on the tiny model: labels drawn from the model's
// own probabilities sharpened by a known T*, so the fitted temperature must come out near T*; the
// result is a new version sharing the base's weights, the base keeps its answers, the alias moves.
// Bad data is refused with a clear message and nothing is written. The calibration itself runs in a
// `decide` process; the refusals run the same entry point (src/cli/main.ts) in this process, output
// captured, since each would otherwise cost a process start and a model load to print one line.
import { spawn } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { answerFromLogits } from '../../src/runtime/calibrate.js';
import { validateDecideRequest } from '../../src/api/validate.js';
import { main } from '../../src/cli/main.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { MODEL_ID, tempWorkspace } from '../batches/helpers.js';
import { decideBin } from '../helpers/bin.js';
import { QUESTIONS, rawLogits, states, writeSharpenedData } from './helpers.js';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const bin = await decideBin();
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [bin, 'calibrate', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `decide calibrate ARGS` through the CLI's entry point in this process, its stdout and stderr captured. */
async function runCliHere(args: string[]): Promise<CliResult> {
  const captured = { stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') =>
    vi.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      captured[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      return true;
    });
  const spies = [capture('stdout'), capture('stderr')];
  try {
    const code = await main(['calibrate', ...args]);
    return { code, ...captured };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

const T_STAR = 0.5;
/** Enough rows that every type's interval for T excludes 1 (no correction), checked below; 80% fit, 20% held out. */
const ROWS = 200;
const NEW_ID = 'svc-alpha-2026-11-22';

describe('decide calibrate (CLI, tiny model)', () => {
  let dir: string;
  let modelsDir: string;
  let dataFile: string;
  let texts: string[];
  let raw: Awaited<ReturnType<typeof rawLogits>>;
  let baseAnswersBefore: unknown;

  beforeAll(async () => {
    ({ dir, modelsDir } = await tempWorkspace('calibrate'));
    texts = states(ROWS, 1);
    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      raw = await rawLogits(service, MODEL_ID, texts);
      dataFile = path.join(dir, 'labelled.jsonl');
      await writeSharpenedData(dataFile, texts, raw, T_STAR, 42);
      baseAnswersBefore = (await service.decide({ model: MODEL_ID, state: texts[0], questions: QUESTIONS })).answers;
    } finally {
      await service.close();
    }
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fits T ~ T*, writes a linked new version with provenance, moves the alias, keeps the base', async () => {
    const reportDir = path.join(dir, 'report');
    // The labelled data never goes to a temp file (a killed run would leave it there): watched, the
    // OS temp dir gets no decide-* entry at any time during the run.
    const tmp = await mkdtemp(path.join(dir, 'tmp-'));
    const created: string[] = [];
    const watcher = watch(tmp, (_event, name) => created.push(String(name)));
    const res = await runCli(['--model', 'svc-alpha', '--data', dataFile, '--models-dir', modelsDir, '--as', NEW_ID, '--report', reportDir, '--json'], { TMPDIR: tmp });
    watcher.close();
    // (Other libraries may put their own files there, e.g. a Vega/Mat debug log; none of ours.)
    expect(created.filter((name) => name.startsWith('decide-'))).toEqual([]);
    expect(res.stderr).not.toMatch(/Error/);
    expect(res.code).toBe(0);
    // Progress for the whole scoring: stderr is not a terminal, so plain lines, the last one at 100%.
    expect(res.stderr).toMatch(new RegExp(`decide calibrate: ${ROWS}/${ROWS} rows \\(100\\.0%\\)`));
    const report = JSON.parse(res.stdout);
    expect(report.base_model).toBe(MODEL_ID);
    expect(report.model).toBe(NEW_ID);
    expect(report.alias).toEqual({ name: 'svc-alpha', resolves_to: NEW_ID });
    expect(report.data.rows).toBe(ROWS);
    expect(report.split).toEqual({ seed: 1, fit_rows: 0.8 * ROWS, held_out_rows: 0.2 * ROWS });

    // Every type: the temperature-only fit brackets T* and rules out 1 (the data is informative
    // enough), and whatever is kept beats "none" held out.
    for (const type of ['choice', 'noul', 'score']) {
      const r = report.types[type];
      const t = r.estimates.temperature_only.temperature;
      expect(t.ci[0], type).toBeLessThanOrEqual(T_STAR);
      expect(t.ci[1], type).toBeGreaterThanOrEqual(T_STAR);
      expect(t.ci[1], type).toBeLessThan(1);
      expect(r.kept, type).not.toBe('none');
      expect(r.nll.after.value, type).toBeLessThan(r.nll.before.value);
      expect(r.nll.after.value, type).toBeLessThan(r.nll.uniform.value);
      expect(typeof r.temperature).toBe('number');
      expect(r.ece.after.ci).toHaveLength(2);
    }

    // The new version: weights hard-linked (same inode), its own decision.json with the fit.
    const base = path.join(modelsDir, MODEL_ID);
    const made = path.join(modelsDir, NEW_ID);
    expect((await stat(path.join(made, 'onnx', 'model.onnx'))).ino).toBe((await stat(path.join(base, 'onnx', 'model.onnx'))).ino);
    const decision = JSON.parse(await readFile(path.join(made, 'decision.json'), 'utf8'));
    const sha = (await import('node:crypto')).createHash('sha256').update(await readFile(dataFile)).digest('hex');
    expect(decision.calibration.fit).toMatchObject({ base_model: MODEL_ID, data: { sha256: sha, rows: ROWS } });
    expect(decision.calibration.temperature.choice).toBe(report.types.choice.temperature);
    expect(decision.calibration.fit.held_out.choice.ece).toBe(report.types.choice.ece.after.value);
    const baseDecision = await readFile(path.join(base, 'decision.json'), 'utf8').catch(() => '');
    expect(baseDecision).not.toMatch(/"fit"/);

    // Reliability diagrams (SVG), and the page that shows them.
    const svg = await readFile(path.join(reportDir, 'reliability-choice.svg'), 'utf8');
    expect(svg).toMatch(/^<svg/);
    expect(svg).toMatch(/after \(ECE/);
    expect(await readFile(path.join(reportDir, 'index.html'), 'utf8')).toContain('reliability-choice.svg');

    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      // The pinned base answers exactly as before; the alias now answers with the new version.
      expect((await service.decide({ model: MODEL_ID, state: texts[0], questions: QUESTIONS })).answers).toEqual(baseAnswersBefore);
      const viaAlias = await service.decide({ model: 'svc-alpha', state: texts[0], questions: QUESTIONS });
      expect(viaAlias.model).toBe(NEW_ID);
      // ... which is the base's raw logits under the fitted correction.
      const [raw] = await rawLogits(service, MODEL_ID, [texts[0]!]);
      const q = validateDecideRequest({ model: MODEL_ID, state: texts[0], questions: QUESTIONS }).questions;
      q.forEach((question, i) => {
        const type = report.types[question.type];
        const bias = type.label_bias ? Float64Array.from(raw![i]!.labels, (l: string) => type.label_bias[l] ?? 0) : undefined;
        expect(viaAlias.answers[question.id]).toEqual(answerFromLogits(question, raw![i]!.labelLogits, type.temperature, bias));
      });
      expect(viaAlias.answers.topic).not.toEqual((baseAnswersBefore as Record<string, unknown>).topic);

      const listed = service.listModels();
      expect(listed.data.find((m) => m.id === NEW_ID)).toMatchObject({ calibrated: true });
      expect(listed.data.find((m) => m.id === NEW_ID)!.held_out_ece!.choice).toBe(report.types.choice.ece.after.value);
      expect(listed.data.find((m) => m.id === MODEL_ID)).toMatchObject({ calibrated: false });
    } finally {
      await service.close();
    }

    // The same id again is refused: a pinned id never changes.
    const again = await runCliHere(['--model', MODEL_ID, '--data', dataFile, '--models-dir', modelsDir, '--as', NEW_ID]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists/);
  }, 300_000);

  it('a line over 1 MiB and a state over the context: both reported by line and left out, every other row used', async () => {
    const rows = 40;
    const file = path.join(await mkdtemp(path.join(dir, 'big-')), 'data.jsonl');
    await writeSharpenedData(file, texts.slice(0, rows), raw.slice(0, rows), T_STAR, 7);
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    const expected = { topic: 'billing' };
    // Line 4: over the /v1/decide body limit. Line 9: under it, but over the tiny model's context.
    lines.splice(3, 0, JSON.stringify({ state: 'x'.repeat(1024 * 1024 + 10), questions: QUESTIONS, expected }));
    lines.splice(8, 0, JSON.stringify({ state: 'word '.repeat(6000), questions: QUESTIONS, expected }));
    await writeFile(file, `${lines.join('\n')}\n`);
    const res = await runCliHere(['--model', MODEL_ID, '--data', file, '--models-dir', modelsDir, '--as', 'svc-alpha-2027-02-01', '--json', '--accept-poor-fit']);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report.data.rows).toBe(rows + 2);
    expect(report.data.failed_rows.map((f: { line: number; error: string }) => [f.line, f.error.split(':')[0]])).toEqual([
      [4, 'state_too_long'],
      [9, 'state_too_long'],
    ]);
    // Every other row's three answers are observations (a failed row's scores in another row's slot would lose one).
    expect(report.data.observations).toBe(rows * 3);
  }, 300_000);

  it('a poor fit (labels against the model: T at its bound, no better than uniform) is refused unless --accept-poor-fit', async () => {
    const rows = 40;
    const file = path.join(await mkdtemp(path.join(dir, 'poor-')), 'data.jsonl');
    const keys: Record<string, string[]> = { topic: Object.keys(QUESTIONS.topic.criteria), refund: ['no', 'yes'], urgency: ['1', '2', '3', '4', '5'] };
    const lines = texts.slice(0, rows).map((state, i) => {
      const expected: Record<string, string> = {};
      for (const q of raw[i]!) {
        const logits = Array.from(q.labelLogits);
        expected[q.questionId] = keys[q.questionId]![logits.indexOf(Math.min(...logits))]!;
      }
      return JSON.stringify({ state, questions: QUESTIONS, expected });
    });
    await writeFile(file, `${lines.join('\n')}\n`);
    const before = (await readdir(modelsDir)).sort();
    const refused = await runCliHere(['--model', MODEL_ID, '--data', file, '--models-dir', modelsDir, '--as', 'svc-alpha-2027-03-01', '--json']);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toMatch(/the fit is poor/);
    expect(refused.stderr).toMatch(/bound 50|no better than uniform/);
    expect(refused.stderr).toMatch(/--accept-poor-fit/);
    expect((await readdir(modelsDir)).sort()).toEqual(before);
    // --json: the refusal as an object a script reads, each poor type with its reasons.
    const { error } = JSON.parse(refused.stdout);
    expect(error).toMatchObject({ code: 'poor_fit', exit_code: 2, message: expect.stringMatching(/the fit is poor/) });
    expect(Object.keys(error.poor_fit).length).toBeGreaterThan(0);
    for (const reasons of Object.values(error.poor_fit) as string[][]) expect(reasons.join('; ')).toMatch(/bound 50|no better than uniform/);

    const accepted = await runCliHere(['--model', MODEL_ID, '--data', file, '--models-dir', modelsDir, '--as', 'svc-alpha-2027-03-01', '--accept-poor-fit', '--json']);
    expect(accepted.code, accepted.stderr).toBe(0);
    const report = JSON.parse(accepted.stdout);
    const poor = Object.entries(report.types).filter(([, r]) => (r as { poor_fit?: string[] }).poor_fit);
    expect(poor.length).toBeGreaterThan(0);
    const decision = JSON.parse(await readFile(path.join(modelsDir, 'svc-alpha-2027-03-01', 'decision.json'), 'utf8'));
    for (const [type] of poor) expect(decision.calibration.fit.held_out[type].poor_fit.length).toBeGreaterThan(0);
    // GET /v1/models/{id} serves the reasons as decision.json records them: a list, not one string.
    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
    const app = await createServer({ service, apiKeys: ['dk_calibration_listing_key'], dataDir: path.join(modelsDir, '..', 'listing-data'), rateLimit: false, logger: false });
    try {
      const entry = (await app.inject({ method: 'GET', url: '/v1/models/svc-alpha-2027-03-01', headers: { authorization: 'Bearer dk_calibration_listing_key' } })).json();
      for (const [type] of poor) expect(entry.held_out[type].poor_fit).toEqual(decision.calibration.fit.held_out[type].poor_fit);
    } finally {
      await app.close();
      await service.close();
    }
  }, 300_000);

  describe('bad data: a clear error and nothing written', () => {
    const listing = async () => (await readdir(modelsDir)).sort();
    const refuse = async (lines: string | null, args: string[], message: RegExp) => {
      const before = await listing();
      const file = path.join(await mkdtemp(path.join(dir, 'bad-')), 'data.jsonl');
      if (lines !== null) await writeFile(file, lines);
      const res = await runCliHere(['--data', file, '--models-dir', modelsDir, '--as', 'svc-alpha-2027-01-01', ...args]);
      expect(res.code, res.stderr).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(await listing()).toEqual(before);
    };
    const row = (expected: Record<string, string>, state = 'the parcel never arrived') => JSON.stringify({ state, questions: QUESTIONS, expected });

    it('an empty file', () => refuse('\n\n', ['--model', MODEL_ID], /has no rows/));
    it('a missing file', () => refuse(null, ['--model', MODEL_ID], /cannot read/));
    it('malformed lines, each named', () =>
      refuse(`${row({ topic: 'billing' })}\n{not json\n${JSON.stringify({ state: 'x', questions: QUESTIONS })}\n[1]\n`, ['--model', MODEL_ID],
        /3 bad lines.*\n.*line 2: not valid JSON.*\n.*line 3: expected: required.*\n.*line 4: must be a JSON object/));
    it('a key given twice (refused as /v1/decide refuses it, not "last wins")', () =>
      refuse(`{"state": "a", "state": "b", "questions": ${JSON.stringify(QUESTIONS)}, "expected": {"topic": "billing"}}\n`, ['--model', MODEL_ID], /line 1: duplicate key "state"/));
    it('an invalid question', () =>
      refuse(JSON.stringify({ state: 'x', questions: { q: { type: 'maybe', instructions: 'x' } }, expected: { q: 'a' } }), ['--model', MODEL_ID], /line 1: .*type/));
    it('an unknown model', () => refuse(row({ topic: 'billing' }), ['--model', 'svc-omega'], /model 'svc-omega' is not installed/));
    it('labels that are not options (reported; fatal only when nothing usable is left)', () =>
      refuse(`${row({ topic: 'weather' })}\n${row({ refund: 'maybe', nope: 'x' })}\n`, ['--model', MODEL_ID], /no row gave a usable expected label; nothing was fitted \(3 expected labels were left out\):\n {2}line 1, topic: "weather" is not an option \(options: .*\)\n {2}line 2, refund: "maybe" is not an option \(options: no, yes\)\n {2}line 2, nope: no question "nope" in this row$/m));
    it('a --report path that is a file (checked before anything is scored or installed)', async () => {
      const file = path.join(await mkdtemp(path.join(dir, 'report-')), 'taken');
      await writeFile(file, 'not a folder');
      await refuse(row({ topic: 'billing' }), ['--model', MODEL_ID, '--report', file], /^decide calibrate: --report .*taken: cannot be the report's folder: it, or a folder above it, is a file$/m);
      await refuse(row({ topic: 'billing' }), ['--model', MODEL_ID, '--report', path.join(file, 'below')], /cannot be the report's folder/);
      // Never inside the models directory (a model's own folder included).
      await refuse(row({ topic: 'billing' }), ['--model', MODEL_ID, '--report', path.join(modelsDir, MODEL_ID)], /cannot be the report's folder: it is inside the models directory/);
      // A run refused for its data makes no report folder.
      const unmade = path.join(path.dirname(file), 'new-report');
      await refuse('\n', ['--model', MODEL_ID, '--report', unmade], /has no rows/);
      await expect(stat(unmade)).rejects.toMatchObject({ code: 'ENOENT' });
    });
    it('too few labelled answers to fit anything', () =>
      refuse(Array.from({ length: 10 }, () => row({ topic: 'billing' })).join('\n'), ['--model', MODEL_ID], /too few labelled answers/));
  });
});
