/**
 * The web console in a real browser (Debian's Chromium through playwright-core) against a real
 * `decide serve` process on the tiny model; no part of the API is mocked. One walk through every
 * page, in order: a wrong key is refused, a right one kept in sessionStorage; the playground's bars
 * equal POST /v1/decide's numbers for the request its "Copy as curl" snippet shows; a 400 is shown
 * as what it means; the models page shows a calibrated version's figures and draws its reliability
 * diagram from GET /v1/models' points (as many bins as its 82 held-out answers support, each point
 * with its interval, in order of confidence), a broken version with its reason and an incomplete
 * directory; a dropped JSONL file's bad lines are listed by number before anything runs, the batch
 * reaches 100% and its results download byte for byte, its failed row is listed; a large batch is
 * cancelled; health shows readiness and the /metrics numbers. No CSP violation, no request URL and
 * no server log line carries the key. Screenshots of each page go to test/.tmp/console-screenshots.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import OpenAI, { toFile } from 'openai';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJsonText } from '../../src/api/json-text.js';
import { calibrateModel } from '../../src/calibration/run.js';
import { keysInOrder } from '../../src/domain/key-order.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from '../api/fixtures.js';
import { QUESTIONS, rawLogits, states, writeSharpenedData } from '../calibration/helpers.js';
import { ROOT } from '../helpers/bin.js';
import { launchChromium } from '../helpers/chromium.js';
import { consoleBuilt } from '../helpers/console-build.js';
import { brokenVersion } from '../helpers/broken-version.js';
import { metricValue, startServe, type ServeProcess } from './serve-process.js';

const SHOTS = path.join(ROOT, 'test', '.tmp', 'console-screenshots');
const CALIBRATED = 'svc-alpha-2026-11-22';
/** Records of the batch that is cancelled: far more than the tiny model scores in the seconds the cancel takes. */
const LARGE_BATCH_RECORDS = 25_000;

let dirs: TempDirs;
let server: ServeProcess;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
let page: Page;
const cspViolations: string[] = [];
const requestUrls: string[] = [];

async function calibratedVersion(modelsDir: string, root: string): Promise<void> {
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
  // 410 rows: 82 held out (20%), one answer of each type per row: 4 bins of at least 20 answers.
  const texts = states(410, 3);
  const file = path.join(root, 'labelled.jsonl');
  try {
    await writeSharpenedData(file, texts, await rawLogits(service, 'svc-alpha-2026-10', texts), 0.5, 5);
  } finally {
    await service.close();
  }
  await calibrateModel({ model: 'svc-alpha', data: file, modelsDir, as: CALIBRATED, acceptPoorFit: true, resamples: { figures: 50, parameters: 20 } });
}

const api = (p: string, init: RequestInit = {}) => fetch(`${server.url}${p}`, { ...init, headers: { ...AUTH, ...(init.headers as object) } });

const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  rmSync(SHOTS, { recursive: true, force: true });
  mkdirSync(SHOTS, { recursive: true });
  const built = consoleBuilt();
  browser = await launchChromium({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  context = browser.context;
  dirs = await tempModels(['svc-alpha-2026-10']);
  await calibratedVersion(dirs.modelsDir, dirs.root);
  await brokenVersion(dirs.modelsDir);
  mkdirSync(path.join(dirs.modelsDir, 'svc-alpha-2026-12'));
  writeFileSync(path.join(dirs.modelsDir, 'svc-alpha-2026-12', 'config.json'), '{}');
  await built;
  server = await startServe({
    args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1', '--log-level', 'info'],
    env: { DECIDE_API_KEYS: TEST_KEY, DECIDE_RATE_LIMIT_RPS: '100000', DECIDE_RATE_LIMIT_BURST: '100000', DECIDE_BATCH_CHUNK_RECORDS: '16', PORT: undefined },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (msg) => {
    if (/Content[- ]Security[- ]Policy|Refused to/i.test(msg.text())) cspViolations.push(msg.text());
  });
  page.on('request', (req) => requestUrls.push(req.url()));
}, 600_000); // the first run on a fresh machine installs Chromium (apt-get) here

afterAll(async () => {
  await browser?.close();
  if (server) await server.stop();
  dirs?.cleanup();
});

/** Options of a question in the order the page shows them, with their probabilities. */
async function bars(question: string): Promise<Array<[string, number]>> {
  return page.locator(`[data-question="${question}"] [data-option]`).evaluateAll((els) => els.map((el) => [el.getAttribute('data-option')!, Number(el.getAttribute('data-prob'))] as [string, number]));
}

describe('the console in a browser', () => {
  it('refuses a wrong key, keeps a right one in sessionStorage only', async () => {
    await page.goto(`${server.url}/console`);
    await page.fill('#api-key', 'not-a-key');
    await page.press('#api-key', 'Enter');
    await expect.poll(() => page.locator('[data-key-rejected]').textContent()).toContain('not accepted');
    await shot('key-rejected');

    await page.fill('#api-key', TEST_KEY);
    await page.press('#api-key', 'Enter');
    await page.locator('nav[aria-label="pages"]').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('decide.apiKey')")).toBe(TEST_KEY);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await context.cookies()).toEqual([]);
  });

  it('playground: the bars are the JSON API answer to the request "Copy as curl" shows', async () => {
    await page.locator('#model option[value="svc-alpha"]').waitFor({ state: 'attached' });
    await page.selectOption('#model', 'svc-alpha');
    await page.click('#run');
    await page.locator('[data-result]').waitFor();

    const curl = await page.locator('[data-snippet="curl"]').textContent();
    expect(curl).toContain('Authorization: Bearer $DECIDE_API_KEY');
    expect(curl).not.toContain(TEST_KEY);
    const body = JSON.parse(/-d '([\s\S]*)'$/.exec(curl!)![1]!.replace(/'\\''/g, "'")) as { questions: Record<string, unknown> };
    const res = await api('/v1/decide', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { model: string; answers: Record<string, { probs: Record<string, number>; top: string }> };
    expect(answer.model).toBe(CALIBRATED);
    expect(await page.locator('[data-model]').textContent()).toBe(CALIBRATED);
    expect(Object.keys(answer.answers)).toEqual(['topic', 'refund', 'urgency']);
    for (const [id, a] of Object.entries(answer.answers)) {
      const shown = await bars(id);
      const expected = Object.entries(a.probs).sort(([, x], [, y]) => y - x);
      expect(shown.map(([k]) => k).sort()).toEqual(Object.keys(a.probs).sort());
      shown.forEach(([key, p], i) => {
        expect(p).toBeCloseTo(a.probs[key]!, 6);
        expect(p).toBeCloseTo(expected[i]![1], 6); // most probable first
      });
      expect(await page.locator(`[data-question="${id}"] [data-top]`).textContent()).toBe(a.top);
    }
    expect(Number(await page.locator('[data-input-tokens]').textContent())).toBeGreaterThan(0);
    await shot('playground');

    await page.click('[data-dialect="systemone"]');
    const systemOne = JSON.parse((await page.locator('[data-snippet="systemone"]').textContent())!);
    expect(systemOne.questions.urgency.criteria).toEqual(['not urgent', 'somewhat urgent', 'urgent']);
    expect(systemOne.questions.topic.criteria).toEqual(body.questions.topic && (body.questions.topic as { criteria: unknown }).criteria);
    await page.click('[data-dialect="openai"]');
    const openai = (await page.locator('[data-snippet="openai"]').textContent())!;
    const params = JSON.parse(/client\.decisions\.create\(([\s\S]*)\);\nconsole/.exec(openai)![1]!);
    expect(params.questions.map((q: { type: string; name: string }) => `${q.type}:${q.name}`)).toEqual(['choice:topic', 'predicate:refund', 'score:urgency']);
    // The model reads a level's description (ours) or "label: description" (OpenAI's): the description is the label.
    expect(params.questions[2].levels.map((l: { label: string }) => l.label)).toEqual(['not urgent', 'somewhat urgent', 'urgent']);
    expect(openai).toContain('process.env.DECIDE_API_KEY');
  });

  it('playground: a 400 from the API is shown with its message', async () => {
    await page.fill('#q0-instructions', '');
    await page.click('#run');
    const alert = page.locator('.results [role="alert"]');
    await expect.poll(() => alert.textContent()).toContain('The request was refused');
    expect(await alert.textContent()).toMatch(/instructions/);
    await shot('playground-error');
    await page.fill('#q0-instructions', 'What is the ticket about?');
  });

  it('playground: a JSON state is sent as an object; text that is not a JSON object is caught before sending', async () => {
    await page.check('input[name="state-mode"] >> nth=1');
    await page.fill('#state', '{"ticket": "charged twice",');
    await expect.poll(() => page.locator('form [role="alert"]').textContent()).toMatch(/^State: /);
    expect(await page.locator('#run').isDisabled()).toBe(true);
    await page.fill('#state', '{"ticket": "charged twice", "order": 1182}');
    await page.click('#run');
    await expect.poll(() => page.locator('[data-question="topic"] [data-option]').count()).toBe(3);
    const curl = (await page.locator('[data-snippet="curl"]').textContent())!;
    expect(JSON.parse(/-d '([\s\S]*)'$/.exec(curl)![1]!).state).toEqual({ ticket: 'charged twice', order: 1182 });
  });

  it('playground: each "Copy as" snippet, sent, answers what the bars show; one a dialect cannot say is not offered', async () => {
    const SNIPPET = path.join(ROOT, 'test', '.tmp', `copy-as-openai-${process.pid}.mjs`);
    /** Probabilities are rounded to 6 decimals: one rounding step is the most two scorings may differ by. */
    const near = (got: number, want: number, what: string) => expect(Math.abs(got - want), what).toBeLessThanOrEqual(1e-6 + 1e-12);
    /** Runs the playground and returns its bars as question -> option -> probability. */
    const runAndRead = async () => {
      const before = await page.locator('[data-result]').getAttribute('data-result');
      await page.click('#run');
      await expect.poll(() => page.locator('[data-result]').getAttribute('data-result')).not.toBe(before);
      const shown: Record<string, Record<string, number>> = {};
      for (const id of ['topic', 'refund', 'urgency']) shown[id] = Object.fromEntries(await bars(id));
      return shown;
    };
    const snippet = async (dialect: string) => {
      await page.click(`[data-dialect="${dialect}"]`);
      return (await page.locator(`[data-snippet="${dialect}"]`).textContent())!;
    };
    const sendSystemOne = async (shown: Record<string, Record<string, number>>) => {
      const res = await api('/v1/systemone', { method: 'POST', headers: { 'content-type': 'application/json' }, body: await snippet('systemone') });
      expect(res.status).toBe(200);
      const { answers } = (await res.json()) as { answers: Record<string, { noul?: number; probabilities?: Record<string, number> }> };
      near(answers.refund!.noul!, shown.refund!.yes!, 'refund');
      for (const id of ['topic', 'urgency']) {
        expect(Object.keys(answers[id]!.probabilities!).sort()).toEqual(Object.keys(shown[id]!).sort());
        for (const [key, p] of Object.entries(answers[id]!.probabilities!)) near(p, shown[id]![key]!, `${id} ${key}`);
      }
    };

    // Descriptions of no and yes: System One can say them, OpenAI's predicate cannot.
    await page.fill('[aria-label="refund option 1 description"]', 'keeps the money as it is');
    await page.fill('[aria-label="refund option 2 description"]', 'wants the money back');
    let shown = await runAndRead();
    await sendSystemOne(shown);
    await page.click('[data-dialect="openai"]');
    expect(await page.locator('[data-snippet-unavailable="openai"]').textContent()).toMatch(/predicate questions take no descriptions .*"refund"/);
    expect(await page.locator('[data-snippet="openai"]').count()).toBe(0);

    // Without them, the openai snippet runs as a Node script with the official client.
    await page.fill('[aria-label="refund option 1 description"]', '');
    await page.fill('[aria-label="refund option 2 description"]', '');
    shown = await runAndRead();
    await sendSystemOne(shown);
    writeFileSync(SNIPPET, await snippet('openai'));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [SNIPPET], { env: { ...process.env, DECIDE_API_KEY: TEST_KEY } });
      const answers = JSON.parse(stdout) as Array<{ name: string; probability?: number; probabilities?: Array<{ value: string | number; probability: number }> }>;
      expect(answers.map((a) => a.name)).toEqual(['topic', 'refund', 'urgency']);
      near(answers[1]!.probability!, shown.refund!.yes!, 'refund');
      for (const p of answers[0]!.probabilities!) near(p.probability, shown.topic![String(p.value)]!, `topic ${p.value}`);
      for (const p of answers[2]!.probabilities!) near(p.probability, shown.urgency![String(p.value)]!, `urgency ${p.value}`);
    } finally {
      rmSync(SNIPPET, { force: true });
    }

    // Levels 1, 2, 3: neither dialect can number them so; curl still can.
    for (const [i, key] of ['1', '2', '3'].entries()) await page.fill(`[aria-label="urgency option ${i + 1} key"]`, key);
    for (const dialect of ['systemone', 'openai']) {
      await page.click(`[data-dialect="${dialect}"]`);
      expect(await page.locator(`[data-snippet-unavailable="${dialect}"]`).textContent()).toMatch(/"urgency" with levels 1, 2, 3 .* use levels 0, 1, 2/);
    }
    expect(await snippet('curl')).toContain('"urgency"');
    await shot('playground-copy-as');
    for (const [i, key] of ['0', '1', '2'].entries()) await page.fill(`[aria-label="urgency option ${i + 1} key"]`, key);
    await page.focus('#run'); // where the earlier tests leave the keyboard (the models test tabs on from there)
  });

  it('playground: option keys keep the order of the rows, integer-like ones included, in the request and every snippet', async () => {
    const keys = ['2', '10', '1'];
    for (const [i, key] of keys.entries()) await page.fill(`[aria-label="topic option ${i + 1} key"]`, key);
    const before = await page.locator('[data-result]').getAttribute('data-result');
    await page.click('#run');
    await expect.poll(() => page.locator('[data-result]').getAttribute('data-result')).not.toBe(before);
    const shown = Object.fromEntries(await bars('topic'));

    await page.click('[data-dialect="curl"]');
    const curl = (await page.locator('[data-snippet="curl"]').textContent())!;
    const ordered = (text: string) => {
      const parsed = parseJsonText(text);
      if (!parsed.ok) throw new Error(parsed.reason);
      return parsed.value as any;
    };
    const body = ordered(/-d '([\s\S]*)'$/.exec(curl)![1]!.replace(/'\\''/g, "'"));
    expect(keysInOrder(body.questions.topic.criteria)).toEqual(keys);
    await page.click('[data-dialect="systemone"]');
    expect(keysInOrder(ordered((await page.locator('[data-snippet="systemone"]').textContent())!).questions.topic.criteria)).toEqual(keys);
    await page.click('[data-dialect="openai"]');
    const params = JSON.parse(/client\.decisions\.create\(([\s\S]*)\);\nconsole/.exec((await page.locator('[data-snippet="openai"]').textContent())!)![1]!);
    expect(params.questions[0].choices.map((c: { value: string }) => c.value)).toEqual(keys);

    // OpenAI's choices are an array, their order never in doubt: the bars are its answer.
    const res = await api('/v1/decisions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params) });
    expect(res.status).toBe(200);
    const answer = ((await res.json()) as { answers: Array<{ probabilities?: Array<{ value: string; probability: number }> }> }).answers[0]!;
    for (const p of answer.probabilities!) expect(Math.abs(p.probability - shown[p.value]!), p.value).toBeLessThanOrEqual(1e-6 + 1e-12);

    for (const [i, key] of ['shipping', 'billing', 'other'].entries()) await page.fill(`[aria-label="topic option ${i + 1} key"]`, key);
    await page.click('[data-dialect="curl"]');
    await page.focus('#run');
  });

  it('playground: two questions with one id, or two options with one key, are caught before sending; a new row takes a free key', async () => {
    const alert = page.locator('form [role="alert"]');
    await page.fill('#q1-id', 'topic');
    await expect.poll(() => alert.textContent()).toContain(`Question 2: the id "topic" is also question 1's`);
    expect(await page.locator('#run').isDisabled()).toBe(true);
    await page.fill('#q1-id', 'refund');
    await page.fill('[aria-label="topic option 2 key"]', 'shipping');
    await expect.poll(() => alert.textContent()).toContain('Question 1: two options are "shipping"');
    expect(await page.locator('#run').isDisabled()).toBe(true);
    await page.fill('[aria-label="topic option 2 key"]', 'billing');
    await expect.poll(() => alert.count()).toBe(0);

    // Levels 0, 1, 2 less 0, plus one: the new level is 3, not a second 2.
    await page.click('[data-question-editor="urgency"] [aria-label="remove option 0"]');
    await page.click('[data-question-editor="urgency"] >> text=+ level');
    expect(await page.inputValue('[aria-label="urgency option 3 key"]')).toBe('3');
    expect(await alert.count()).toBe(0);
    expect(await page.locator('#run').isDisabled()).toBe(false);
    for (const [i, [key, description]] of [['0', 'not urgent'], ['1', 'somewhat urgent'], ['2', 'urgent']].entries()) {
      await page.fill(`[aria-label="urgency option ${i + 1} key"]`, key!);
      await page.fill(`[aria-label="urgency option ${i + 1} description"]`, description!);
    }
  });

  it('models: a calibrated version with its figures and reliability diagram, a broken one with its reason', async () => {
    expect((await api('/v1/decide', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'other', state: 'x', questions: { q: { type: 'noul', instructions: 'ok?' } } }) })).status).toBe(500);
    type Bin = { confidence: number; accuracy: number; count: number; low: number; high: number };
    const listing = (await (await api('/v1/models')).json()) as {
      data: Array<{ id: string; held_out?: Record<string, { ece: number; observations: number; reliability: { before: Bin[]; after: Bin[] } }> }>;
    };
    const calibrated = listing.data.find((m) => m.id === CALIBRATED)!;
    const type = 'choice';
    const figures = calibrated.held_out![type]!;

    // Keyboard: Tab to the Models link and press Enter.
    for (let i = 0; i < 12 && (await page.evaluate('document.activeElement?.textContent')) !== 'Models'; i++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator(`[data-model-id="${CALIBRATED}"]`).waitFor();
    expect(page.url()).toBe(`${server.url}/console/models`);

    const row = page.locator(`[data-model-id="${CALIBRATED}"] tr[data-type="${type}"]`);
    expect(await row.locator('[data-ece-after]').textContent()).toBe(figures.ece.toFixed(3));
    await page.click(`[data-diagram-button="${CALIBRATED}:${type}"]`);
    const diagram = page.locator(`figure.reliability[data-type="${type}"]`);
    await diagram.waitFor();
    // As many bins as the held-out answers support at 20 or more each (at most 10), not 15 bins of a few.
    expect(figures.observations).toBe(82);
    expect(figures.reliability.after.map((b) => b.count)).toEqual([20, 21, 20, 21]);
    for (const series of ['before', 'after'] as const) {
      const drawn = await diagram.locator(`[data-series="${series}"]`).evaluate((g) => {
        const el = g as unknown as { querySelectorAll(s: string): ArrayLike<{ getAttribute(a: string): string | null }> };
        const attrs = (selector: string, names: string[]) => Array.from(el.querySelectorAll(selector), (e) => names.map((n) => Number(e.getAttribute(n))));
        return {
          points: attrs(':scope > circle', ['cx', 'cy', 'data-count']),
          bars: attrs(':scope > .interval > line:first-child', ['x1', 'y1', 'y2']),
          line: String(el.querySelectorAll(':scope > polyline')[0]!.getAttribute('points')),
        };
      });
      const bins = figures.reliability[series];
      expect(drawn.points).toHaveLength(bins.length);
      // In order of confidence, left to right, and the line joins them in that order.
      for (let i = 1; i < drawn.points.length; i++) expect(drawn.points[i]![0]).toBeGreaterThanOrEqual(drawn.points[i - 1]![0]!);
      expect(drawn.line.split(' ').map((p) => Number(p.split(',')[0]))).toEqual(drawn.points.map(([cx]) => Number(cx!.toFixed(1))));
      // Each point has its interval: a bar at its x from its high to its low end, around it.
      expect(drawn.bars).toHaveLength(bins.length);
      drawn.bars.forEach(([x, top, bottom], i) => {
        const [cx, cy] = drawn.points[i]!;
        expect(x).toBeCloseTo(cx!, 6);
        expect(top).toBeLessThanOrEqual(cy! + 1e-9);
        expect(bottom).toBeGreaterThanOrEqual(cy! - 1e-9);
        expect(bottom! - top!).toBeGreaterThan(0);
      });
    }
    expect(await diagram.locator('[data-bins-caption]').textContent()).toBe('82 held-out answers, 4 equal-mass bins of 20+ answers, 95% intervals');

    expect(await page.locator('[data-model-id="other-2026-10"] [data-broken]').textContent()).toMatch(/Broken: .+/);
    expect(await page.locator('[data-incomplete="svc-alpha-2026-12"]').textContent()).toContain('svc-alpha-2026-12');
    // The broken version is shown once, as broken; no file is named by the server's absolute path.
    expect(await page.locator('[data-incomplete="other-2026-10"]').count()).toBe(0);
    expect(await page.locator('[data-broken]').textContent()).toContain('other-2026-10/onnx/');
    expect(await page.locator('body').textContent()).not.toContain(dirs.root);
    await shot('models');
  });

  it('batches: bad lines shown by number before anything runs; the batch reaches 100%; results download; failed rows listed', async () => {
    await page.click('nav >> text=Batches');
    await page.locator('[data-dropzone]').waitFor();
    const lines = Array.from({ length: 12 }, (_, i) => JSON.stringify({ custom_id: `row-${i + 1}`, state: `ticket ${i + 1}: my parcel is late`, questions: QUESTIONS }));
    lines.splice(4, 0, '{"custom_id": "broken", "state": ');
    const text = `${lines.join('\n')}\n`;
    // Dropped as a file, as a person would drag it in.
    await page.locator('[data-dropzone]').evaluate((zone, content) => {
      // Browser globals by hand: the tests are type-checked without the DOM library.
      const g = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: unknown): void } };
        File: new (parts: string[], name: string, options: { type: string }) => unknown;
        DragEvent: new (type: string, init: Record<string, unknown>) => never;
      };
      const data = new g.DataTransfer();
      data.items.add(new g.File([content], 'tickets.jsonl', { type: 'application/x-ndjson' }));
      zone.dispatchEvent(new g.DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, text);
    await page.locator('[data-validation="errors"]').waitFor();
    expect(await page.locator('[data-error-line]').evaluateAll((els) => els.map((e) => e.getAttribute('data-error-line')))).toEqual(['5']);
    expect(((await (await api('/v1/batches')).json()) as { data: unknown[] }).data).toEqual([]); // nothing ran
    expect(await page.locator('#create-batch').textContent()).toBe('Create anyway (1 row will fail)');
    await shot('batches-validation');

    await page.click('#create-batch');
    const row = page.locator('li.batch').first();
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 60_000 }).toBe('completed');
    const id = (await row.getAttribute('data-batch-id'))!;
    expect(await row.locator('[data-percent]').getAttribute('data-percent')).toBe('100');
    const batch = (await (await api(`/v1/batches/${id}`)).json()) as { progress: { total: number; completed: number; failed: number } };
    expect(batch.progress).toEqual({ total: 13, completed: 12, failed: 1 });

    const [download] = await Promise.all([page.waitForEvent('download'), row.locator('[data-action="download"]').click()]);
    const saved = readFileSync((await download.path())!, 'utf8');
    expect(saved).toBe(await (await api(`/v1/batches/${id}/results`)).text());
    expect(saved.trim().split('\n')).toHaveLength(13);

    await row.locator('[data-action="failed"]').click();
    const failed = row.locator('[data-failed-row]');
    await failed.first().waitFor();
    expect(await failed.count()).toBe(1);
    expect(await failed.first().textContent()).toMatch(/invalid_question.*line 5/);
    await shot('batches');
  });

  it('batches: a large batch is cancelled from its row', async () => {
    const record = (i: number) => JSON.stringify({ custom_id: `big-${i}`, state: `ticket ${i}: the parcel never arrived`, questions: QUESTIONS });
    const big = `${Array.from({ length: LARGE_BATCH_RECORDS }, (_, i) => record(i)).join('\n')}\n`;
    await page.setInputFiles('#batch-file', { name: 'big.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(big) });
    await page.locator('[data-validation="ok"]').waitFor({ timeout: 60_000 });
    await page.click('#create-batch');
    const row = page.locator('li.batch').first();
    // The upload (6 MB) is read and checked before the job exists and the list shows it: seconds on
    // a busy machine, beyond expect.poll's default second.
    await expect.poll(async () => (await row.textContent()) ?? '', { timeout: 30_000 }).toContain(`of ${LARGE_BATCH_RECORDS}`);
    await row.locator('[data-action="cancel"]').click();
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 60_000 }).toBe('cancelled');
    const id = (await row.getAttribute('data-batch-id'))!;
    const batch = (await (await api(`/v1/batches/${id}`)).json()) as { status: string; progress: { total: number; completed: number } };
    expect(batch.status).toBe('cancelled');
    expect(batch.progress.completed).toBeLessThan(LARGE_BATCH_RECORDS);
    await shot('batches-cancelled');
  });

  it("batches: a job created through OpenAI's Batch API is listed like ours, reaches 100% and lists its failed row", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_KEY, maxRetries: 0 });
    const lines = [1, 2, 3].map((i) => JSON.stringify({ custom_id: `oa-${i}`, method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: `ticket ${i}`, questions: QUESTIONS } }));
    // A request the endpoint refuses: its row has response.status_code 400 and our error body.
    lines.splice(1, 0, JSON.stringify({ custom_id: 'oa-bad', method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: 'x', questions: { q: { type: 'bogus', instructions: '?' } } } }));
    const file = await client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'openai.jsonl'), purpose: 'batch' });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/decide' as never, completion_window: '24h' });
    const row = page.locator(`li.batch[data-batch-id="${batch.id}"]`);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 60_000 }).toBe('completed');
    expect(await row.textContent()).toContain('OpenAI Batch API');
    expect(await row.locator('[data-percent]').getAttribute('data-percent')).toBe('100');
    expect(await row.textContent()).toMatch(/3 done.* of 4/);

    await row.locator('[data-action="failed"]').click();
    const failed = row.locator('[data-failed-row]');
    await failed.first().waitFor();
    expect(await failed.count()).toBe(1);
    expect(await failed.first().getAttribute('data-failed-row')).toBe('oa-bad');
    expect(await failed.first().textContent()).toMatch(/HTTP 400 invalid_question.*questions\["q"\]\.type/);
    await shot('batches-openai-failed');
  });

  it('batches: past one page of jobs, the newest 50 are listed and "Show 50 older batches" adds the rest', async () => {
    /** Every batch id of the key, newest first, through the API's own paging. */
    const allIds = async () => {
      const ids: string[] = [];
      for (let after = ''; ; ) {
        const page = (await (await api(`/v1/batches?limit=100${after}`)).json()) as { data: Array<{ id: string }>; has_more: boolean };
        ids.push(...page.data.map((b) => b.id));
        if (!page.has_more) return ids;
        after = `&after=${page.data.at(-1)!.id}`;
      }
    };
    const record = `${JSON.stringify({ custom_id: 'p', state: 'a short ticket', questions: QUESTIONS })}\n`;
    for (let n = (await allIds()).length; n < 53; n++) {
      const form = new FormData();
      form.append('model', 'svc-alpha');
      form.append('file', new Blob([record]), 'one.jsonl');
      expect((await api('/v1/batches', { method: 'POST', body: form })).status).toBe(201);
    }
    const ids = await allIds();
    expect(ids.length).toBeGreaterThanOrEqual(53);
    await page.click('nav >> text=Playground');
    await page.click('nav >> text=Batches');
    const rows = page.locator('li.batch');
    await expect.poll(() => rows.count()).toBe(50);
    expect(await page.locator(`li.batch[data-batch-id="${ids[49]}"]`).count()).toBe(1);
    expect(await page.locator(`li.batch[data-batch-id="${ids.at(-1)}"]`).count()).toBe(0);
    await page.click('#older-batches');
    await expect.poll(() => rows.count()).toBe(ids.length);
    expect(await rows.evaluateAll((els) => els.map((el) => el.getAttribute('data-batch-id')))).toEqual(ids);
    expect(await page.locator('#older-batches').count()).toBe(0);
    await shot('batches-paged');
  });

  it('health: readiness and the numbers /metrics exports, refreshing', async () => {
    await page.click('nav >> text=Health');
    await page.locator('[data-ready="ready"]').waitFor();
    await expect.poll(() => page.locator('[data-figure="rate"]').textContent(), { timeout: 10_000 }).not.toBe('…');
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    // Decisions answered through every door (the playground's, and the Copy-as snippets sent above).
    const answered = ['/v1/decide', '/v1/systemone', '/v1/decisions'].reduce((n, route) => n + metricValue(metrics, 'decide_http_requests_total', `route="${route}",status="200"`), 0);
    expect(answered).toBeGreaterThanOrEqual(2);
    expect(Number(await page.locator('[data-figure="answered"]').textContent())).toBe(answered);
    const cached = metricValue(metrics, 'decide_engine_cached_tokens_total');
    const computed = metricValue(metrics, 'decide_engine_prefix_tokens_computed_total');
    expect(await page.locator('[data-figure="hit-rate"]').textContent()).toBe(`${((100 * cached) / (cached + computed)).toFixed(1)}%`);
    await shot('health');
  });

  it('reads at 1280x800 and on a narrow window without sideways scrolling', async () => {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 });
      for (const p of ['playground', 'models', 'batches', 'health']) {
        await page.click(`nav >> text=${p[0]!.toUpperCase()}${p.slice(1)}`);
        await page.locator('main .page').first().waitFor();
        expect(await page.evaluate('document.documentElement.scrollWidth'), `${p} at ${width} px`).toBeLessThanOrEqual(width);
      }
    }
    await page.click('nav >> text=Playground');
    await page.click('#run');
    await page.locator('[data-result]').waitFor();
    await shot('playground-narrow');
    // The longest id a question may have, unbroken, wraps in its answer.
    const longId = 'x'.repeat(128);
    await page.fill('#q1-id', longId);
    await page.click('#run');
    await page.locator(`[data-question="${longId}"]`).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth'), 'a 128-character id at 390 px').toBeLessThanOrEqual(390);
    await page.fill('#q1-id', 'refund');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('says so when the server goes away', async () => {
    await page.click('nav >> text=Health');
    await page.locator('[data-ready="ready"]').waitFor();
    expect(await server.stop()).toBe(0);
    await expect.poll(() => page.locator('[role="alert"]').first().textContent(), { timeout: 15_000 }).toContain('The server cannot be reached');
    // The last figures stay, no longer called ready.
    expect(await page.locator('[data-ready="unknown"]').count()).toBe(1);
    expect(await page.locator('[data-ready="ready"]').count()).toBe(0);
  });

  it('never puts the key in a URL or the server log, and breaks no CSP rule', async () => {
    expect(requestUrls.length).toBeGreaterThan(10);
    expect(requestUrls.filter((u) => u.includes(TEST_KEY))).toEqual([]);
    expect(requestUrls.filter((u) => !u.startsWith(server.url))).toEqual([]);
    // No favicon request: it would be a failed authentication counted against this address.
    expect(requestUrls.filter((u) => u.includes('favicon'))).toEqual([]);
    expect(server.stdout() + server.stderr()).not.toContain(TEST_KEY);
    expect(server.stderr()).toContain('/console');
    expect(cspViolations).toEqual([]);
  });
});
