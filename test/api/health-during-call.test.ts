/**
 * Health, readiness and metrics answer while an engine call is computing: a listening server (real
 * HTTP, fetch) on the tiny model takes one long /v1/decide (a ~3,000-token state and 64 questions,
 * about a second of compute), and while it runs the probes are sent over and over.
 *
 * Proven by ordering, not by a clock: `decide_engine_calls_in_progress` is 1 only while the call
 * holds the engine's compute lock, so a /metrics body that shows it was rendered during the call.
 * When two such bodies bracket a /readyz and a /healthz with the same `decide_engine_calls_total`
 * (the same call), those probes were answered while the call computed, and the decide response had
 * not arrived yet. Before the engine read its counters without the compute lock, every /metrics
 * sent during the call waited for its end and could never show a call in progress.
 */
import type { AddressInfo } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, decideBody, longState, tempModels, type Questions, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

/** The value of one series for the model in a /metrics body. */
function series(body: string, name: string): number {
  const line = body.split('\n').find((l) => l.startsWith(`${name}{model="svc-alpha-2026-10"}`));
  if (!line) throw new Error(`${name} missing from /metrics`);
  return Number(line.split(' ').pop());
}

async function scrape(): Promise<{ inProgress: number; calls: number }> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  const body = await res.text();
  return { inProgress: series(body, 'decide_engine_calls_in_progress'), calls: series(body, 'decide_engine_calls_total') };
}

it('/readyz, /healthz and /metrics answer while a long decide call computes', async () => {
  const questions: Questions = {};
  for (let i = 0; i < 64; i++) questions[`q${i}`] = { type: 'noul', instructions: `Is point number ${i} of the ticket about a refund?` };
  const before = await scrape();
  expect(before.inProgress).toBe(0);

  let settled = false;
  const decide = fetch(`${base}/v1/decide`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(decideBody(longState(3000), questions)),
  }).finally(() => {
    settled = true;
  });

  // Probes until the decide response arrives; each round: metrics, readyz, healthz, metrics.
  const duringTheCall: Array<{ readyz: number; healthz: number; models: string[] }> = [];
  while (!settled) {
    const first = await scrape();
    const ready = await fetch(`${base}/readyz`);
    const readyBody = (await ready.json()) as { models?: string[] };
    const health = await fetch(`${base}/healthz`);
    await health.text();
    const second = await scrape();
    const answeredInsideTheCall =
      first.inProgress === 1 && second.inProgress === 1 && first.calls === before.calls && second.calls === before.calls;
    if (answeredInsideTheCall && !settled) {
      duringTheCall.push({ readyz: ready.status, healthz: health.status, models: readyBody.models ?? [] });
    }
  }

  const res = await decide;
  expect(res.status).toBe(200);
  const body = (await res.json()) as { answers: Record<string, unknown> };
  expect(Object.keys(body.answers)).toHaveLength(64);
  // At least one round of probes ran entirely inside the call, and every such probe succeeded.
  expect(duringTheCall.length).toBeGreaterThan(0);
  for (const round of duringTheCall) {
    expect(round).toEqual({ readyz: 200, healthz: 200, models: ['svc-alpha-2026-10'] });
  }
  const after = await scrape();
  expect(after).toEqual({ inProgress: 0, calls: before.calls + 1 });
});
