/**
 * /metrics exports every engine counter and gauge of the table (src/engine/engine-counters.ts), each
 * with its type and a sample per loaded model, and a server opened with engine options loads its
 * engines with them (ServerOptions.engine: what `decide serve`'s engine flags become). The option
 * observed here is the ONNX Runtime profile prefix: the profile is written when the engine closes.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ENGINE_COUNTERS, ENGINE_GAUGES } from '../../src/engine/engine-counters.js';
import { createServer } from '../../src/server/app.js';
import { engineSeries } from '../../src/server/metrics.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let app: FastifyInstance | undefined;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  app = await createServer({
    modelsDir: dirs.modelsDir,
    dataDir: dirs.dataDir,
    apiKeys: [TEST_KEY],
    rateLimit: false,
    logger: false,
    engine: { ortProfilePrefix: path.join(dirs.root, 'ort'), gatherLogits: false },
  });
});

afterAll(async () => {
  await app?.close();
  dirs?.cleanup();
});

describe('engine counters in /metrics and engine options through createServer', () => {
  it('a series per row of the counter table, typed as the table says, for the model that answered', async () => {
    const res = await app!.inject({
      method: 'POST',
      url: '/v1/decide',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: JSON.stringify({ model: 'svc-alpha', state: 'The parcel arrived broken.', questions: { refund: { type: 'noul', instructions: 'Refund?' } } }),
    });
    expect(res.statusCode, res.body).toBe(200);
    const text = (await app!.inject({ method: 'GET', url: '/metrics' })).body;
    const rows = [...ENGINE_COUNTERS.map((c) => engineSeries(c, 'counter')), ...ENGINE_GAUGES.map((g) => engineSeries(g, 'gauge'))];
    expect(rows).toHaveLength(ENGINE_COUNTERS.length + ENGINE_GAUGES.length);
    for (const series of rows) {
      expect(text, series.name).toContain(`# TYPE ${series.name} ${series.type}\n`);
      expect(text, series.name).toMatch(new RegExp(`^${series.name}\\{model="svc-alpha-2026-10"\\} [0-9.e+-]+$`, 'm'));
    }
    expect(text).toMatch(/^decide_engine_calls_total\{model="svc-alpha-2026-10"\} 1$/m);
    expect(text).toMatch(/^decide_engine_run_seconds_total\{model="svc-alpha-2026-10"\} (?!0$)[0-9.e+-]+$/m);
  });

  it('the engine options given to createServer reach the engine: its ONNX Runtime profile is written on close', async () => {
    await app!.close();
    app = undefined;
    const profiles = readdirSync(dirs.root).filter((name) => /^ort_.*\.json$/.test(name));
    expect(profiles).toHaveLength(1);
  });
});
