/**
 * Latency of one POST /v1/decide over real HTTP: the HTTP server (createServer) on the bench
 * model, listening on a loopback port, and one client sending requests one after another, so each
 * request's time is its own (no queueing behind another). Three shapes: one noul question on the
 * same state (prefix cached after the first), one noul question on a new state each time, four
 * mixed questions on a new state each time. Measured, reported, never asserted.
 */
import { rm, symlink } from 'node:fs/promises';
import path from 'node:path';

import { createServer } from '../src/server/app.js';
import { DecisionService } from '../src/service/decision-service.js';
import { makeScratch } from './scratch.js';
import { stat, type Stat } from './stat.js';

export interface LatencyResult {
  scenario: string;
  requests: number;
  /** Milliseconds per request, client side (fetch to the end of the body). */
  ms: Stat;
}

const KEY = 'bench-latency-key';

/** Four questions of every type, as a support desk would ask them (also bench/live-during-batch.ts). */
export const QUESTIONS = {
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
  topic: {
    type: 'choice',
    instructions: 'What is the ticket about?',
    criteria: { payments: 'Charges, invoices, refunds', delivery: 'Shipping and parcels', other: 'Anything else' },
  },
  urgency: { type: 'score', instructions: 'How urgent is it?', criteria: { '0': 'Can wait', '1': 'Soon', '2': 'Right away' } },
  angry: { type: 'noul', instructions: 'Is the customer angry?' },
};

/** A short support ticket, different for each `tag` and `i`. */
export function ticket(tag: string, i: number): string {
  return `Ticket ${tag}-${i}: customer ${i * 7} writes that order #${1000 + i} is ${i % 2 ? 'a week late' : 'damaged'} and asks what happens next.`;
}

/** Runs the three scenarios with `requests` requests each (after a few untimed warm-up requests). */
export async function measureHttpLatency(options: {
  modelDir: string;
  threads: number;
  provider: 'cpu' | 'cuda';
  requests: number;
}): Promise<LatencyResult[]> {
  // The registry names a model by its directory: give the bench model a fixed id in a scratch models dir.
  const scratch = await makeScratch('http');
  const modelId = 'bench-http';
  await symlink(path.resolve(options.modelDir), path.join(scratch, modelId), 'dir');
  const service = await DecisionService.open({
    modelsDir: scratch,
    ensureDefaultModel: false,
    preload: [modelId],
    threads: options.threads,
    provider: options.provider,
  });
  const app = await createServer({ service, apiKeys: [KEY], rateLimit: false, dataDir: path.join(scratch, 'data'), logger: false });
  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const url = `http://127.0.0.1:${port}/v1/decide`;
    const post = async (body: unknown): Promise<number> => {
      const t0 = performance.now();
      const res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await res.arrayBuffer();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`bench: POST /v1/decide answered ${res.status}`);
      return ms;
    };
    const run = async (scenario: string, bodies: unknown[]): Promise<LatencyResult> => {
      const times: number[] = [];
      for (const body of bodies) times.push(await post(body));
      return { scenario, requests: bodies.length, ms: stat(times) };
    };
    const n = options.requests;
    const one = { refund: QUESTIONS.refund };
    for (let i = 0; i < 3; i++) await post({ model: modelId, state: ticket('warm', i), questions: QUESTIONS });
    return [
      await run('1 noul question, same state (prefix cached)', Array.from({ length: n }, () => ({ model: modelId, state: ticket('same', 0), questions: one }))),
      await run('1 noul question, new state each time', Array.from({ length: n }, (_, i) => ({ model: modelId, state: ticket('fresh', i), questions: one }))),
      await run('4 questions, new state each time', Array.from({ length: n }, (_, i) => ({ model: modelId, state: ticket('mixed', i), questions: QUESTIONS }))),
    ];
  } finally {
    await app.close();
    await service.close();
    await rm(scratch, { recursive: true, force: true });
  }
}
