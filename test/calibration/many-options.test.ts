// `decide calibrate` on questions with more than 26 options (two-token codes, scored as each code's
// joint log-probability): labels drawn from the tiny model's own code distribution sharpened by a
// known T*, so the fitted temperature must bracket T*; the label bias is estimated per code ("A0",
// "D9", ...) in the same map as the letters, and the new version answers with exactly that
// correction applied to the codes' log-probabilities.
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { validateDecideRequest } from '../../src/api/validate.js';
import { main } from '../../src/cli/main.js';
import { seededRandom } from '../../src/calibration/observations.js';
import { answerFromLogits } from '../../src/runtime/calibrate.js';
import { codeLabels } from '../../src/runtime/labels.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { MODEL_ID, tempWorkspace } from '../batches/helpers.js';
import { states } from './helpers.js';

const OPTIONS = 40;
const QUESTIONS = {
  intent: {
    type: 'choice',
    instructions: 'Which intent does the ticket express?',
    criteria: Object.fromEntries(Array.from({ length: OPTIONS }, (_, i) => [`intent_${i}`, `intent number ${i}`])),
  },
} as const;
const KEYS = Object.keys(QUESTIONS.intent.criteria);
const T_STAR = 0.5;
const ROWS = 150;
const NEW_ID = 'svc-alpha-2026-11-23';

function draw(logits: ArrayLike<number>, t: number, random: () => number): number {
  const z = Array.from(logits, (l) => l / t);
  const m = Math.max(...z);
  const e = z.map((v) => Math.exp(v - m));
  let u = random() * e.reduce((a, b) => a + b, 0);
  for (let i = 0; i < e.length; i++) if ((u -= e[i]!) < 0) return i;
  return e.length - 1;
}

async function runCliHere(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const captured = { stdout: '', stderr: '' };
  const spies = (['stdout', 'stderr'] as const).map((stream) =>
    vi.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      captured[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      return true;
    }),
  );
  try {
    return { code: await main(['calibrate', ...args]), ...captured };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

describe('decide calibrate with more than 26 options (tiny model)', () => {
  let dir: string;
  let modelsDir: string;
  let dataFile: string;
  const texts = states(ROWS, 7);

  beforeAll(async () => {
    ({ dir, modelsDir } = await tempWorkspace('calibrate-codes'));
    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      const requests = texts.map((state) => validateDecideRequest({ model: MODEL_ID, state, questions: QUESTIONS }));
      const outcomes = await service.decideRecords(MODEL_ID, requests);
      const random = seededRandom(5);
      const lines = outcomes.map((o, i) => {
        if (!o.ok || !o.raw) throw new Error('scoring failed');
        expect(o.raw[0]!.labels).toEqual(codeLabels(OPTIONS));
        return JSON.stringify({ state: texts[i], questions: QUESTIONS, expected: { intent: KEYS[draw(o.raw[0]!.labelLogits, T_STAR, random)] } });
      });
      dataFile = path.join(dir, 'labelled.jsonl');
      await writeFile(dataFile, `${lines.join('\n')}\n`);
    } finally {
      await service.close();
    }
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fits T ~ T* on the codes, a bias per code, and the new version answers with them', async () => {
    const res = await runCliHere(['--model', MODEL_ID, '--data', dataFile, '--models-dir', modelsDir, '--as', NEW_ID, '--json']);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout);
    const choice = report.types.choice;
    const t = choice.estimates.temperature_only.temperature;
    expect(t.ci[0]).toBeLessThanOrEqual(T_STAR);
    expect(t.ci[1]).toBeGreaterThanOrEqual(T_STAR);
    expect(choice.kept).not.toBe('none');
    expect(Object.keys(choice.estimates.temperature_and_label_bias.label_bias).sort()).toEqual(codeLabels(OPTIONS).sort());

    const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      const request = validateDecideRequest({ model: MODEL_ID, state: texts[0], questions: QUESTIONS });
      const [base] = await service.decideRecords(MODEL_ID, [request]);
      const raw = (base as { raw: Array<{ labels: string[]; labelLogits: ArrayLike<number> }> }).raw[0]!;
      const calibrated = await service.decide({ model: NEW_ID, state: texts[0], questions: QUESTIONS });
      const bias = choice.label_bias ? Float64Array.from(raw.labels, (l) => choice.label_bias[l] ?? 0) : undefined;
      expect(calibrated.answers.intent).toEqual(answerFromLogits(request.questions[0]!, raw.labelLogits, choice.temperature, bias));
    } finally {
      await service.close();
    }
  }, 300_000);
});
