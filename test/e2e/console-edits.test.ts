/**
 * The console keeps a person's work and does one thing per press, in a real browser (Debian's
 * Chromium through playwright-core) against a real `decide serve` on the tiny model: a key no
 * server can hold is named as such; the playground's form survives page switches, Back and the key
 * form a rejected key brings back; a run in flight marks the answers shown as the previous
 * request's; "Create batch" pressed twice makes one job; the same file can be chosen again after a
 * batch; dropping text keeps the chosen file. Where a test needs an answer to stay out, the page's
 * request is held (page.route) and then sent on, unchanged, to the server.
 */
import type { BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AUTH, TEST_KEY, tempModels, type TempDirs } from '../api/fixtures.js';
import { QUESTIONS } from '../calibration/helpers.js';
import { launchChromium } from '../helpers/chromium.js';
import { consoleBuilt } from '../helpers/console-build.js';
import { startServe, type ServeProcess } from './serve-process.js';

let dirs: TempDirs;
let server: ServeProcess;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
let page: Page;

/** How long a poll waits for what the page shows after a server answer (a loaded CI machine takes seconds). */
const SERVER_WAIT = { timeout: 15_000 };
const api = (p: string) => fetch(`${server.url}${p}`, { headers: AUTH });
const batchIds = async () => ((await (await api('/v1/batches')).json()) as { data: Array<{ id: string }> }).data.map((b) => b.id);

/** Holds the page's requests that `matches` until release() (each then goes to the server as it was); count: how many were held. */
async function hold(matches: (route: Route) => boolean): Promise<{ release: () => Promise<void>; count: () => number }> {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const sent: Array<Promise<void>> = [];
  const pattern = `${server.url}/**`;
  const handler = (route: Route) => {
    if (!matches(route)) return route.continue();
    sent.push(gate.then(() => route.continue()));
    return sent.at(-1);
  };
  await page.route(pattern, handler);
  return {
    count: () => sent.length,
    release: async () => {
      open();
      await Promise.all(sent);
      await page.unroute(pattern, handler);
    },
  };
}

/** The playground's model list has the alias and the dated id (an option whose value is its text has no value attribute). */
const modelsListed = () => expect.poll(() => page.locator('#model option').count(), SERVER_WAIT).toBe(2);

async function signIn(key: string): Promise<void> {
  await page.fill('#api-key', key);
  await page.press('#api-key', 'Enter');
}

beforeAll(async () => {
  const built = consoleBuilt();
  browser = await launchChromium({ viewport: { width: 1280, height: 800 } });
  context = browser.context;
  dirs = await tempModels(['svc-alpha-2026-10']);
  await built;
  server = await startServe({
    args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1'],
    env: { DECIDE_API_KEYS: TEST_KEY, DECIDE_RATE_LIMIT_RPS: '100000', DECIDE_RATE_LIMIT_BURST: '100000', DECIDE_INVALID_KEY_RPS: '1000', DECIDE_INVALID_KEY_BURST: '1000', PORT: undefined },
  });
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${server.url}/console`);
  await signIn(TEST_KEY);
  await page.locator('nav[aria-label="pages"]').waitFor();
}, 600_000); // the first run on a fresh machine installs Chromium (apt-get) here

afterAll(async () => {
  await browser?.close();
  if (server) await server.stop();
  dirs?.cleanup();
});

describe('the console keeps work and does one thing per press', () => {
  it('playground: the form survives a page switch, Back, and signing in again after the key was rejected', async () => {
    await modelsListed();
    await page.selectOption('#model', 'svc-alpha-2026-10');
    await page.fill('#state', 'my own ticket: the screen cracked on arrival');
    await page.fill('#q0-instructions', 'Which team handles it?');
    await page.click('text=+ question');
    await page.fill('#q3-instructions', 'Is the customer angry?');
    const form = async () => ({
      model: await page.inputValue('#model'),
      state: await page.inputValue('#state'),
      q0: await page.inputValue('#q0-instructions'),
      q3: await page.inputValue('#q3-instructions'),
    });
    const typed = await form();
    expect(typed).toEqual({ model: 'svc-alpha-2026-10', state: 'my own ticket: the screen cracked on arrival', q0: 'Which team handles it?', q3: 'Is the customer angry?' });

    await page.click('nav >> text=Models');
    await page.locator('[data-model-id]').first().waitFor();
    await page.goBack();
    await modelsListed();
    expect(await form()).toEqual(typed);
    await page.click('nav >> text=Batches');
    await page.click('nav >> text=Playground');
    await modelsListed();
    expect(await form()).toEqual(typed);

    // The server stops accepting the tab's key: a real 401 on Run brings the key form back.
    await page.evaluate("sessionStorage.setItem('decide.apiKey', 'a-key-this-server-never-had')");
    await page.click('#run');
    await expect.poll(() => page.locator('.key-form [role="alert"]').first().textContent(), SERVER_WAIT).toContain('The server stopped accepting the key');
    await signIn(TEST_KEY);
    await modelsListed();
    expect(await form()).toEqual(typed);
  });

  it('playground: a question type changed and back keeps its options; Run waits for a model the list shows', async () => {
    await modelsListed();
    const key = (i: number) => page.inputValue(`[aria-label="topic option ${i} key"]`);
    const description = (i: number) => page.inputValue(`[aria-label="topic option ${i} description"]`);
    await page.fill('[aria-label="topic option 1 description"]', 'Parcels, as typed');
    await page.selectOption('#q0-type', 'score');
    expect([await key(1), await description(1)]).toEqual(['0', 'Parcels, as typed']);
    await page.selectOption('#q0-type', 'choice');
    expect([await key(1), await description(1), await key(3)]).toEqual(['shipping', 'Parcels, as typed', 'other']);

    // The listing fails: the kept model is not shown, so Run sends nothing.
    const models = `${server.url}/v1/models`;
    await page.route(models, (route) => route.fulfill({ status: 503, contentType: 'application/json', body: '{"code":"server_error","message":"loading"}' }));
    await page.reload();
    await expect.poll(() => page.locator('#model option').first().textContent(), SERVER_WAIT).toBe('(no models)');
    expect(await page.locator('#run').isDisabled()).toBe(true);
    await page.unroute(models);
    await page.reload();
    await modelsListed();
    expect(await page.locator('#run').isDisabled()).toBe(false);
  });

  it('playground: while a run is in flight, the answers shown are marked as the previous request\'s', async () => {
    const results = page.locator('section.results');
    await page.click('#run');
    await page.locator('[data-result]').waitFor();
    const first = await page.locator('[data-result]').getAttribute('data-result');
    expect(await results.getAttribute('aria-busy')).toBe('false');
    expect(await page.locator('[data-stale]').count()).toBe(0);

    const decide = await hold((route) => new URL(route.request().url()).pathname === '/v1/decide');
    try {
      await page.fill('#state', 'a different ticket: charged twice');
      await page.click('#run');
      await expect.poll(() => decide.count(), SERVER_WAIT).toBe(1);
      expect(await results.getAttribute('aria-busy')).toBe('true');
      expect(await page.locator('[data-stale]').textContent()).toContain("the answers below are the previous request's");
      expect(await results.getAttribute('class')).toContain('stale');
    } finally {
      await decide.release();
    }
    await expect.poll(() => page.locator('[data-result]').getAttribute('data-result'), SERVER_WAIT).not.toBe(first);
    expect(await results.getAttribute('aria-busy')).toBe('false');
    expect(await page.locator('[data-stale]').count()).toBe(0);
  });

  it('batches: a double press creates one job; the same file can be chosen again; dropped text keeps the file', async () => {
    const file = { name: 'one.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(`${JSON.stringify({ custom_id: 'a', state: 'my parcel is late', questions: QUESTIONS })}\n`) };
    await page.click('nav >> text=Batches');
    await page.setInputFiles('#batch-file', file);
    await page.locator('[data-validation="ok"]').waitFor();
    // Emptied once read: a browser reports the same selection again only to an empty input.
    expect(await page.locator('#batch-file').evaluate((el) => (el as unknown as { files: { length: number } }).files.length)).toBe(0);

    // Text dragged onto the drop zone is no file: the chosen file and its check stay.
    await page.locator('[data-dropzone]').evaluate((zone) => {
      const g = globalThis as unknown as { DataTransfer: new () => { setData(type: string, text: string): void }; DragEvent: new (type: string, init: Record<string, unknown>) => never };
      const data = new g.DataTransfer();
      data.setData('text/plain', 'just some words');
      zone.dispatchEvent(new g.DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    expect(await page.locator('[data-dropzone]').textContent()).toContain('one.jsonl');
    expect(await page.locator('[data-validation="ok"]').count()).toBe(1);

    const before = await batchIds();
    const isCreate = (route: Route) => route.request().method() === 'POST' && new URL(route.request().url()).pathname === '/v1/batches';
    let create = await hold(isCreate);
    try {
      await page.dblclick('#create-batch');
      await expect.poll(() => create.count(), SERVER_WAIT).toBe(1);
      expect(await page.locator('#create-batch').isDisabled()).toBe(true);
      await page.waitForTimeout(300); // room for a second POST, were one sent
    } finally {
      await create.release();
    }
    await expect.poll(() => page.locator('section.create [role="status"]').last().textContent(), SERVER_WAIT).toMatch(/^Created batch_\w+ \(1 records\)\.$/);
    expect(create.count()).toBe(1);
    expect((await batchIds()).filter((id) => !before.includes(id))).toHaveLength(1);

    // The same file again, then Enter twice on the button.
    await page.setInputFiles('#batch-file', file);
    await page.locator('[data-validation="ok"]').waitFor();
    create = await hold(isCreate);
    try {
      await page.focus('#create-batch');
      await page.keyboard.press('Enter');
      await page.keyboard.press('Enter');
      await expect.poll(() => create.count(), SERVER_WAIT).toBe(1);
      await page.waitForTimeout(300);
    } finally {
      await create.release();
    }
    await expect.poll(async () => (await batchIds()).filter((id) => !before.includes(id)).length, SERVER_WAIT).toBe(2);
    await page.waitForTimeout(500);
    expect((await batchIds()).filter((id) => !before.includes(id))).toHaveLength(2);
  });

  it('names a key no server can hold, and a refused oversized key is not a server error', async () => {
    // Forget key signs the tab out: the key and the playground's form go.
    await page.click('text=Forget key');
    await page.locator('#api-key').waitFor();
    expect(await page.evaluate("[sessionStorage.getItem('decide.apiKey'), sessionStorage.getItem('decide.playground')]")).toEqual([null, null]);

    await signIn('ключ-один');
    const verdict = page.locator('[data-key-rejected]');
    await expect.poll(() => verdict.textContent(), SERVER_WAIT).toContain('This key cannot be used');
    expect(await verdict.textContent()).toContain('plain ASCII');
    expect(await page.locator('main').textContent()).not.toContain('Something went wrong in the page');
    expect(await page.evaluate("sessionStorage.getItem('decide.apiKey')")).toBeNull();

    // Past the server's header limit: 431 is about the request; retrying cannot help.
    await signIn('k'.repeat(20_000));
    const alert = page.locator('form [role="alert"]');
    await expect.poll(() => alert.textContent(), SERVER_WAIT).toContain('The request was refused (HTTP 431)');
    expect(await alert.textContent()).not.toMatch(/retry|server error/i);

    await signIn(TEST_KEY);
    await page.locator('nav[aria-label="pages"]').waitFor();
  });
});
