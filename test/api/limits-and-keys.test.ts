/**
 * API keys (sources, hashing, the generated key file), the per-key token bucket, 5xx hiding,
 * Retry-After from the engine's queue, readiness and shutdown: through app.inject() with a stand-in
 * service where the behaviour comes from the service's answer, not from a model.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import { EngineError } from '../../src/errors/engine-error.js';
import type { NormalizedDecideRequest } from '../../src/api/validate.js';
import {
  ApiKeySet,
  GENERATED_KEY_FILE,
  keyIdOf,
  parseKeysFile,
  resolveApiKeys,
  sha256,
} from '../../src/server/api-keys.js';
import { createServer } from '../../src/server/app.js';
import { authenticate } from '../../src/server/auth.js';
import { TokenBuckets, rateLimitFromEnv } from '../../src/server/rate-limit.js';
import type { DecisionResult } from '../../src/domain/decision.js';
import type { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, OTHER_KEY, TEST_KEY, decideBody, expectErrorShape } from './fixtures.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'decide-keys-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A service stand-in: decideNormalized() (what every dialect's route calls) does what the test says; no model behind it. */
function stubService(decideNormalized: (request: NormalizedDecideRequest, ctx: { requestId?: string }) => Promise<DecisionResult>, ready = true) {
  let closed = 0;
  const svc = {
    decideNormalized,
    validationLimits: undefined,
    isReady: () => ready,
    whenPreloaded: async () => undefined,
    listModels: () => ({ object: 'list', data: [], aliases: {} }),
    metrics: async () => ({ models: [] }),
    close: async () => {
      closed++;
    },
    get closedCount() {
      return closed;
    },
  };
  return svc as unknown as DecisionService & { closedCount: number };
}

const okDecide = async (_r: NormalizedDecideRequest, ctx: { requestId?: string }): Promise<DecisionResult> => ({
  id: ctx.requestId!,
  model: 'stub-2026-01',
  answers: {},
  inputTokens: 1,
  cachedTokens: 0,
  outputTokens: 1,
});

describe('API keys', () => {
  it('keeps only hashes; verify() returns the keyId (16 hex of the sha256)', () => {
    const set = new ApiKeySet().add('alpha-key').add(`sha256:${sha256('beta-key').toString('hex')}`);
    expect(set.size).toBe(2);
    expect(set.verify('alpha-key')).toBe(sha256('alpha-key').toString('hex').slice(0, 16));
    expect(set.verify('beta-key')).toBe(keyIdOf(sha256('beta-key')));
    expect(set.verify('gamma-key')).toBeUndefined();
    expect(set.verify('')).toBeUndefined();
    expect(JSON.stringify(set)).not.toContain('alpha-key');
  });

  it('parses a keys file: comments, blank lines, CRLF, pre-hashed lines', () => {
    const text = `# team keys\r\nkey-one\r\n\r\n   key-two   \n# sha256 of key-three:\nsha256:${sha256('key-three').toString('hex').toUpperCase()}\n`;
    const set = parseKeysFile(text);
    expect(set.size).toBe(3);
    for (const k of ['key-one', 'key-two', 'key-three']) expect(set.verify(k)).toBeDefined();
    expect(set.verify('# team keys')).toBeUndefined();
  });

  it('rejects a malformed line by number, without echoing it', () => {
    expect(() => parseKeysFile('good-key\nbad key with spaces\n', undefined, 'k.txt')).toThrow(/k\.txt, line 2/);
    let refused: unknown;
    try {
      parseKeysFile('has space-secret99');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/line 1/);
    expect((refused as Error).message).not.toContain('secret99');
    expect(() => parseKeysFile('sha256:abc\n')).toThrow(/line 1/);
  });

  it('resolves options first, then DECIDE_API_KEYS / DECIDE_API_KEYS_FILE', () => {
    const file = path.join(tmp, 'keys.txt');
    writeFileSync(file, 'file-key\n');
    const env = { DECIDE_API_KEYS: 'env-key-1, env-key-2', DECIDE_API_KEYS_FILE: file };
    const fromEnv = resolveApiKeys({ env, dataDir: tmp });
    expect(fromEnv.source).toBe('env');
    for (const k of ['env-key-1', 'env-key-2', 'file-key']) expect(fromEnv.keys.verify(k)).toBeDefined();
    const fromOptions = resolveApiKeys({ apiKeys: ['opt-key'], env, dataDir: tmp });
    expect(fromOptions.source).toBe('options');
    expect(fromOptions.keys.verify('opt-key')).toBeDefined();
    expect(fromOptions.keys.verify('env-key-1')).toBeUndefined();
  });

  it('with no key configured: an error, or (generate) a 0600 key file created once and then reused', () => {
    const dataDir = path.join(tmp, 'data');
    expect(() => resolveApiKeys({ env: {}, dataDir })).toThrow(/no API keys configured/);
    const first = resolveApiKeys({ env: {}, dataDir, generate: true });
    expect(first.source).toBe('generated-file');
    expect(first.generated!.created).toBe(true);
    expect(first.generated!.key).toMatch(/^dk_[A-Za-z0-9_-]{43}$/);
    const file = path.join(dataDir, GENERATED_KEY_FILE);
    expect(first.generated!.path).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.generated!.key);
    const second = resolveApiKeys({ env: {}, dataDir, generate: true });
    expect(second.generated!.created).toBe(false);
    expect(second.generated!.key).toBeUndefined();
    expect(second.keys.verify(first.generated!.key!)).toBe(first.generated!.keyId);
  });

  it('authenticate(): Bearer only, one token', () => {
    const set = new ApiKeySet().add('k-1');
    expect(authenticate('Bearer k-1', set)).toBe(keyIdOf(sha256('k-1')));
    for (const h of [undefined, '', 'k-1', 'Basic k-1', 'Bearer', 'Bearer k-1 k-1', 'Bearer k-2', ['Bearer k-1']]) {
      expect(() => authenticate(h as string | undefined, set)).toThrow(ApiError);
    }
  });
});

describe('token bucket', () => {
  it('allows the burst, then refills at the rate; Retry-After is whole seconds >= 1', () => {
    let now = 0;
    const b = new TokenBuckets({ requestsPerSecond: 0.5, burst: 3 }, () => now);
    expect([b.take('k'), b.take('k'), b.take('k')]).toEqual([0, 0, 0]);
    expect(b.take('k')).toBe(2);
    expect(b.take('other')).toBe(0);
    now = 1000;
    expect(b.take('k')).toBe(1);
    now = 2000;
    expect(b.take('k')).toBe(0);
    const fast = new TokenBuckets({ requestsPerSecond: 1000, burst: 1 }, () => now);
    expect(fast.take('k')).toBe(0);
    expect(fast.take('k')).toBe(1);
  });

  it('reads DECIDE_RATE_LIMIT_RPS / _BURST (defaults 100 and 200) and DECIDE_INVALID_KEY_RPS / _BURST (defaults 2 and 30)', () => {
    expect(rateLimitFromEnv({})).toEqual({ requestsPerSecond: 100, burst: 200, invalidKeys: { requestsPerSecond: 2, burst: 30 } });
    expect(
      rateLimitFromEnv({ DECIDE_RATE_LIMIT_RPS: '2.5', DECIDE_RATE_LIMIT_BURST: '4', DECIDE_INVALID_KEY_RPS: '0.5', DECIDE_INVALID_KEY_BURST: '5' }),
    ).toEqual({ requestsPerSecond: 2.5, burst: 4, invalidKeys: { requestsPerSecond: 0.5, burst: 5 } });
    expect(() => rateLimitFromEnv({ DECIDE_RATE_LIMIT_RPS: 'fast' })).toThrow(/DECIDE_RATE_LIMIT_RPS/);
    expect(() => rateLimitFromEnv({ DECIDE_INVALID_KEY_BURST: '-1' })).toThrow(/DECIDE_INVALID_KEY_BURST/);
  });

  it('wait() reports an empty bucket without taking a token', () => {
    let now = 0;
    const b = new TokenBuckets({ requestsPerSecond: 1, burst: 2 }, () => now);
    expect(b.wait('ip')).toBe(0);
    expect([b.take('ip'), b.take('ip'), b.wait('ip'), b.wait('ip')]).toEqual([0, 0, 1, 1]);
    now = 1000;
    expect([b.wait('ip'), b.take('ip'), b.wait('ip')]).toEqual([0, 0, 1]);
  });
});

describe('through the server', () => {
  it('over the per-key limit: 429 rate_limited with an integer Retry-After; other keys and health unaffected', async () => {
    const app = await createServer({
      service: stubService(okDecide),
      apiKeys: [TEST_KEY, OTHER_KEY],
      dataDir: tmp,
      rateLimit: { requestsPerSecond: 0.25, burst: 2 },
    });
    try {
      const send = (key: string) =>
        app.inject({ method: 'POST', url: '/v1/decide', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: decideBody('s') });
      expect((await send(TEST_KEY)).statusCode).toBe(200);
      expect((await send(TEST_KEY)).statusCode).toBe(200);
      const limited = await send(TEST_KEY);
      expect(limited.statusCode).toBe(429);
      expectErrorShape(limited.json(), 'rate_limited', limited.headers['x-request-id'] as string);
      expect(limited.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      // 4 s until the next token (0.25/s), less the whole seconds that passed since the first
      // request (a loaded machine); the exact arithmetic is tested above with a fixed clock.
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(4);
      expect((await send(OTHER_KEY)).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      // Unauthenticated requests are rejected before they can spend anyone's tokens.
      expect((await app.inject({ method: 'GET', url: '/v1/models' })).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });

  it("the engine queue's 429 carries its Retry-After", async () => {
    const svc = stubService(async () => {
      throw new ApiError('rate_limited', 'the engine queue is full; retry shortly', { retryAfterSeconds: 2.2 });
    });
    const app = await createServer({ service: svc, apiKeys: [TEST_KEY], rateLimit: false, dataDir: tmp });
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { ...AUTH, 'content-type': 'application/json' }, payload: decideBody('s') });
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('3');
      expectErrorShape(res.json(), 'rate_limited', res.headers['x-request-id'] as string);
    } finally {
      await app.close();
    }
  });

  it('an unexpected failure is 500 server_error with a fixed message; the log has the details and the request id', async () => {
    const lines: string[] = [];
    const { Writable } = await import('node:stream');
    const stream = new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) });
    const svc = stubService(async () => {
      throw new TypeError('internal detail: cannot read x of undefined at /srv/secret/path.js:12');
    });
    const app = await createServer({ service: svc, apiKeys: [TEST_KEY], rateLimit: false, dataDir: tmp, logger: { stream } });
    try {
      const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { ...AUTH, 'content-type': 'application/json' }, payload: decideBody('s') });
      expect(res.statusCode).toBe(500);
      const body = res.json();
      expectErrorShape(body, 'server_error', res.headers['x-request-id'] as string);
      expect(res.payload).not.toMatch(/internal detail|secret|\.js|at /);
      const errorLine = lines.map((l) => JSON.parse(l)).find((l) => l.level === 50);
      expect(errorLine.request_id).toBe(body.request_id);
      expect(errorLine.err.message).toContain('internal detail');
    } finally {
      await app.close();
    }
  });

  it('/readyz is 503 in the error shape while no model is loaded; /healthz stays 200', async () => {
    const app = await createServer({ service: stubService(okDecide, false), apiKeys: [TEST_KEY], dataDir: tmp });
    try {
      const ready = await app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expectErrorShape(ready.json(), 'server_error', ready.headers['x-request-id'] as string);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('does not close a service it was given', async () => {
    const svc = stubService(okDecide);
    const app = await createServer({ service: svc, apiKeys: [TEST_KEY], dataDir: tmp });
    await app.close();
    expect(svc.closedCount).toBe(0);
  });

  it('refuses to start without any API key', async () => {
    await expect(createServer({ service: stubService(okDecide), env: {}, dataDir: path.join(tmp, 'empty') })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringMatching(/^createServer: no API keys configured/),
    });
  });

  it('refuses options it does not know or cannot run with, as EngineError ERR_INPUT naming the option', async () => {
    const dataDir = path.join(tmp, 'refused-options');
    const base = { service: stubService(okDecide), apiKeys: [TEST_KEY], dataDir, env: {} };
    const cases: Array<[unknown, string]> = [
      [null, 'createServer: options must be an object, got null'],
      [{ ...base, bogus: 1 }, "createServer: unknown option 'bogus'"],
      [{ ...base, apiKey: [TEST_KEY] }, "createServer: unknown option 'apiKey' (did you mean 'apiKeys'?)"],
      [{ ...base, apiKeys: TEST_KEY }, `createServer: apiKeys must be an array of keys, got '${TEST_KEY}'`],
      [{ ...base, apiKeys: [] }, 'createServer: no API keys: the configured key list and keys file are empty'],
      [{ ...base, bodyLimitBytes: -1 }, 'createServer: bodyLimitBytes must be a whole number of bytes of at least 1, got -1'],
      [{ ...base, rateLimit: { bogus: 1 } }, "createServer: rateLimit: unknown option 'bogus'"],
      [{ ...base, rateLimit: { burst: 5 } }, 'createServer: rateLimit.requestsPerSecond must be a number of at least 0.00001, got undefined'],
      [{ ...base, rateLimit: { requestsPerSecond: 1, burst: 1, invalidKeys: { requestsPerSecond: 1, burst: 0 } } }, 'createServer: rateLimit.invalidKeys.burst must be a number of at least 1, got 0'],
      [{ ...base, env: { DECIDE_RATE_LIMIT_RPS: 'fast' } }, "createServer: DECIDE_RATE_LIMIT_RPS: must be a number of at least 0.00001, got 'fast'"],
      [{ ...base, service: {} }, 'createServer: service must be an open DecisionService, got an object'],
      [{ ...base, keys: ['k'] }, 'createServer: keys must be an ApiKeySet, got an array'],
      [{ ...base, dataDir: 5 }, 'createServer: dataDir must be a path (a string), got 5'],
      // An empty folder would be the current directory: a batch database and a model written there.
      [{ ...base, dataDir: '' }, 'createServer: dataDir must name a folder, got an empty value'],
      [{ ...base, modelsDir: ' ' }, 'createServer: modelsDir must name a folder, got an empty value'],
      [{ ...base, logger: { level: 'info', colour: true } }, "createServer: logger: unknown option 'colour'"],
      [{ ...base, logger: { level: 'loud' } }, "createServer: logger.level must be fatal, error, warn, info, debug, trace or silent, got 'loud'"],
      [{ ...base, service: { ...stubService(okDecide), isOpen: false } }, 'createServer: service must be an open DecisionService, got one that is closed'],
    ];
    for (const [options, message] of cases) {
      const err = await createServer(options as Parameters<typeof createServer>[0]).catch((e: unknown) => e);
      expect(err, message).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: 'ERR_INPUT', message });
      expect(existsSync(dataDir), 'nothing written').toBe(false);
    }
  });
});
