// decisionApp, the API as a fastify plugin, registered in a dependent's own fastify instance with
// nothing but what `decision-engine/server` and `decision-engine/service` export (src/entry/): the
// plugin's options type and ApiKeySet are exported, so its documented use compiles and serves.
// It is encapsulated: the host's routes, parsers, error handler and 404 handler stay the host's,
// and a prefix (the register option, or a prefixed parent plugin) moves the API under it.
import { existsSync } from 'node:fs';
import path from 'node:path';

import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiKeySet, decisionApp, type DecisionAppOptions } from '../../src/entry/server.js';
import { EngineError } from '../../src/entry/engine.js';
import { DecisionService } from '../../src/entry/service.js';
import { AUTH, MIXED_QUESTIONS, TEST_KEY, decideBody, expectErrorShape, expectValidAnswers, tempModels, type TempDirs } from './fixtures.js';

const DEC_ID = /^dec_[0-9A-HJKMNP-TV-Z]{26}$/;
const REQ_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

let dirs: TempDirs;
let service: DecisionService;
const apps: FastifyInstance[] = [];

function pluginOptions(dataDir: string): DecisionAppOptions {
  return {
    service,
    keys: new ApiKeySet().add(TEST_KEY),
    rateLimit: false,
    bodyLimitBytes: 1024 * 1024,
    dataDir: path.join(dirs.dataDir, dataDir),
    ownsService: false,
  };
}

/** A host app with its own routes, error handler and (optionally) 404 handler, then the plugin. */
async function hostApp(
  mount: (app: FastifyInstance, options: DecisionAppOptions) => PromiseLike<unknown>,
  dataDir: string,
  { notFound = false, fastify = {} }: { notFound?: boolean; fastify?: FastifyServerOptions } = {},
): Promise<FastifyInstance> {
  const app = Fastify(fastify);
  apps.push(app);
  app.setErrorHandler((err: Error & { statusCode?: number }, _request, reply) =>
    reply.status(err.statusCode ?? 500).send({ mine: true, msg: err.message }),
  );
  if (notFound) app.setNotFoundHandler((request, reply) => reply.status(404).send({ host404: request.url }));
  // A shared schema of the host's own, named as one of the API's wire schemas.
  app.addSchema({ $id: 'Error', type: 'object', properties: { mine: { type: 'boolean' }, msg: { type: 'string' } } });
  app.get('/hello', { schema: { response: { 500: { $ref: 'Error#' } } } }, async () => ({ hi: 1 }));
  app.post('/echo', async (request) => ({ got: request.body }));
  app.get('/boom', async () => {
    throw Object.assign(new Error('host failure'), { statusCode: 418 });
  });
  await mount(app, pluginOptions(dataDir));
  app.get('/after', async () => ({ after: 1 }));
  app.post('/text', async (request) => ({ got: request.body }));
  await app.ready();
  return app;
}

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await service?.close();
  dirs?.cleanup();
});

describe('decisionApp in a dependent fastify instance', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await hostApp((host, options) => host.register(decisionApp, options), 'root');
  });

  it('answers /v1/decide with the configured key, with a dec_ ULID as its id', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: AUTH, payload: decideBody('The parcel arrived broken.') });
    expect(res.statusCode).toBe(200);
    expect(res.json().model).toBe('svc-alpha-2026-10');
    expect(res.json().id).toMatch(DEC_ID);
    expect(res.headers['x-request-id']).toBe(res.json().id);
    expectValidAnswers(res.json().answers, MIXED_QUESTIONS);
  });

  it('refuses another key with 401 invalid_key', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { authorization: 'Bearer not-this-one' }, payload: decideBody('x') });
    expect(res.statusCode).toBe(401);
    expectErrorShape(res.json(), 'invalid_key', res.headers['x-request-id'] as string);
    expect(res.json().request_id).toMatch(DEC_ID);
  });

  it("leaves the host's routes, body parsers and error handler alone", async () => {
    expect((await app.inject({ method: 'GET', url: '/hello' })).json()).toEqual({ hi: 1 });
    expect((await app.inject({ method: 'GET', url: '/after' })).json()).toEqual({ after: 1 });
    // fastify's own JSON parser (last duplicate wins), not the API's (which refuses duplicates).
    const echo = await app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: '{"a":1,"a":2}' });
    expect(echo.statusCode).toBe(200);
    expect(echo.json()).toEqual({ got: { a: 2 } });
    const text = await app.inject({ method: 'POST', url: '/text', headers: { 'content-type': 'text/plain' }, payload: 'plain words' });
    expect(text.json()).toEqual({ got: 'plain words' });
    const boom = await app.inject({ method: 'GET', url: '/boom' });
    expect(boom.statusCode).toBe(418);
    expect(boom.json()).toEqual({ mine: true, msg: 'host failure' });
    expect(boom.headers['x-request-id']).toBeUndefined();
  });

  it("answers the host's unknown paths with the host's 404, unknown /v1 paths with the API's", async () => {
    const host = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(host.statusCode).toBe(404);
    expect(host.json().code).toBeUndefined();
    const anonymous = await app.inject({ method: 'GET', url: '/v1/nowhere' });
    expect(anonymous.statusCode).toBe(401);
    const api = await app.inject({ method: 'GET', url: '/v1/nowhere', headers: AUTH });
    expect(api.statusCode).toBe(404);
    expectErrorShape(api.json(), 'not_found', api.headers['x-request-id'] as string);
  });
});

describe('decisionApp beside a host 404 handler and request-id settings', () => {
  let app: FastifyInstance;
  /** The host logger's lines, as written (a repeated key would be visible in the text). */
  const lines: string[] = [];
  beforeAll(async () => {
    const stream = { write: (line: string) => void lines.push(line) };
    app = await hostApp((host, options) => host.register(decisionApp, options), 'host404', {
      notFound: true,
      fastify: { requestIdHeader: 'x-request-id', logger: { level: 'info', stream } },
    });
  });

  it("registers, and the host's 404 handler keeps answering its unknown paths", async () => {
    const res = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ host404: '/nowhere' });
  });

  it('names decisions with its own ids, never one the client sends', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/decide',
      headers: { ...AUTH, 'x-request-id': 'chosen-by-client' },
      payload: decideBody('The parcel arrived broken.'),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().id).toMatch(DEC_ID);
    expect(res.headers['x-request-id']).toBe(res.json().id);
    // Its log lines from the scope's first hook on carry that id, once each (fastify's 'incoming
    // request' line comes before any hook, with the host's id).
    const completed = lines.filter((l) => l.includes('"request completed"') && l.includes(res.json().id));
    expect(completed).toHaveLength(1);
    expect(completed[0]).toContain(`"reqId":"${res.json().id}"`);
    expect(completed[0]!.match(/"reqId"/g)).toHaveLength(1);
    const refused = await app.inject({ method: 'POST', url: '/v1/decide', headers: { ...AUTH, 'x-request-id': 'chosen-again' }, payload: { model: 'svc-alpha' } });
    expect(refused.statusCode).toBe(400);
    const about = lines.filter((l) => l.includes(refused.headers['x-request-id'] as string));
    expect(about.length).toBeGreaterThanOrEqual(2);
    for (const line of about) expect(line.match(/"reqId"/g)).toHaveLength(1);
  });
});

describe('decisionApp under a prefix', () => {
  const mounts: Array<[string, (app: FastifyInstance, options: DecisionAppOptions) => PromiseLike<unknown>]> = [
    ['the register option', (host, options) => host.register(decisionApp, { ...options, prefix: '/decisions' })],
    ['a prefixed parent plugin', (host, options) => host.register(async (scope) => scope.register(decisionApp, options), { prefix: '/decisions' })],
  ];
  describe.each(mounts)('by %s', (name, mount) => {
    let app: FastifyInstance;
    beforeAll(async () => {
      app = await hostApp(mount, name.replace(/ /g, '-'), { notFound: true });
    });

    it('answers <prefix>/v1/decide with a dec_ id, and nothing at /v1/decide', async () => {
      const res = await app.inject({ method: 'POST', url: '/decisions/v1/decide', headers: AUTH, payload: decideBody('The parcel arrived broken.') });
      expect(res.statusCode).toBe(200);
      expect(res.json().id).toMatch(DEC_ID);
      expectValidAnswers(res.json().answers, MIXED_QUESTIONS);
      const root = await app.inject({ method: 'POST', url: '/v1/decide', headers: AUTH, payload: decideBody('x') });
      expect(root.json()).toEqual({ host404: '/v1/decide' });
    });

    it('serves the other dialects, models, probes and openapi under the prefix', async () => {
      const openai = await app.inject({ method: 'POST', url: '/decisions/v1/decisions', headers: AUTH, payload: {} });
      expect(openai.statusCode).toBe(400);
      const models = await app.inject({ method: 'GET', url: '/decisions/v1/models', headers: AUTH });
      expect(models.statusCode).toBe(200);
      expect(models.headers['x-request-id']).toMatch(REQ_ID);
      expect((await app.inject({ method: 'GET', url: '/decisions/healthz' })).statusCode).toBe(200);
      const spec = await app.inject({ method: 'GET', url: '/decisions/openapi.json', headers: AUTH });
      expect(Object.keys(spec.json().paths)).toContain('/decisions/v1/decide');
      expect(Object.keys(spec.json().paths)).not.toContain('/hello');
      // The API's own Error schema, by its name, beside a host schema of that name.
      const errorRef = spec.json().paths['/decisions/v1/decide'].post.responses['400'].content['application/json'].schema.$ref as string;
      const component = spec.json().components.schemas[errorRef.replace('#/components/schemas/', '')];
      expect(Object.keys(component.properties)).toEqual(['code', 'message', 'request_id']);
    });

    it("answers unknown paths under the prefix with the API's 404 (after authentication), the rest with the host's", async () => {
      expect((await app.inject({ method: 'GET', url: '/decisions/nope' })).statusCode).toBe(401);
      const api = await app.inject({ method: 'GET', url: '/decisions/nope', headers: AUTH });
      expect(api.statusCode).toBe(404);
      expectErrorShape(api.json(), 'not_found', api.headers['x-request-id'] as string);
      // The console calls /v1 and loads its assets from the root of the site: not served under a prefix.
      expect((await app.inject({ method: 'GET', url: '/decisions/console', headers: AUTH })).statusCode).toBe(404);
      expect((await app.inject({ method: 'GET', url: '/hello' })).json()).toEqual({ hi: 1 });
      expect((await app.inject({ method: 'GET', url: '/nowhere' })).json()).toEqual({ host404: '/nowhere' });
    });
  });
});

describe('decisionApp options', () => {
  it('refuses unknown, missing and wrong options as EngineError ERR_INPUT naming them, before it opens anything', async () => {
    const dataDir = path.join(dirs.dataDir, 'refused-options');
    const good = { ...pluginOptions('refused-options'), prefix: '/decisions' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, "decisionApp: missing options 'service', 'keys', 'rateLimit', 'bodyLimitBytes', 'dataDir', 'ownsService'"],
      [{ service, keys: good.keys }, "decisionApp: missing options 'rateLimit', 'bodyLimitBytes', 'dataDir', 'ownsService'"],
      [{ ...good, dataDir: undefined }, "decisionApp: missing option 'dataDir'"],
      [{ ...good, dataDir: '' }, 'decisionApp: dataDir must name a folder, got an empty value'],
      [{ ...good, bogus: 1 }, "decisionApp: unknown option 'bogus'"],
      [{ ...good, keys: [TEST_KEY] }, 'decisionApp: keys must be an ApiKeySet, got an array'],
      [{ ...good, keys: new ApiKeySet() }, 'decisionApp: keys holds no API key; add one (keys.add(key))'],
      [{ ...good, rateLimit: { bogus: 1 } }, "decisionApp: rateLimit: unknown option 'bogus'"],
      [{ ...good, bodyLimitBytes: 0 }, 'decisionApp: bodyLimitBytes must be a whole number of bytes of at least 1, got 0'],
      [{ ...good, ownsService: 'no' }, "decisionApp: ownsService must be true or false, got 'no'"],
    ];
    for (const [options, message] of cases) {
      const app = Fastify();
      try {
        const err = await app.register(decisionApp, options as unknown as DecisionAppOptions).ready().then(() => undefined, (e: unknown) => e);
        expect(err, message).toBeInstanceOf(EngineError);
        expect(err).toMatchObject({ code: 'ERR_INPUT', message });
      } finally {
        await app.close();
      }
      expect(existsSync(dataDir), 'nothing written').toBe(false);
    }
  });
});
