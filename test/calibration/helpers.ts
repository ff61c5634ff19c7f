/** Labelled data for calibration tests, drawn from the tiny model's own probabilities sharpened by a known T*. */
import { writeFile } from 'node:fs/promises';

import { seededRandom } from '../../src/calibration/observations.js';
import { validateDecideRequest } from '../../src/api/validate.js';
import type { DecisionService } from '../../src/service/decision-service.js';

export const QUESTIONS = {
  topic: {
    type: 'choice',
    instructions: 'What is the ticket about?',
    criteria: { shipping: 'Delivery and parcels', billing: 'Charges and invoices', account: 'Login and profile', other: 'Anything else' },
  },
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
  urgency: {
    type: 'score',
    instructions: 'How urgent is the ticket?',
    criteria: { '1': 'Not urgent', '2': 'Low', '3': 'Medium', '4': 'High', '5': 'Critical' },
  },
} as const;

/** Option keys of each question in presentation order (noul [no, yes]; score ascending). */
const OPTION_KEYS: Record<string, string[]> = {
  topic: Object.keys(QUESTIONS.topic.criteria),
  refund: ['no', 'yes'],
  urgency: ['1', '2', '3', '4', '5'],
};

const WORDS = ['parcel', 'broken', 'charged', 'twice', 'late', 'refund', 'hello', 'order', 'invoice', 'password', 'login', 'address', 'thanks', 'never', 'arrived'];

export function states(n: number, seed: number): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => {
    const len = 4 + Math.floor(random() * 30);
    return `#${i} ${Array.from({ length: len }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ')}`;
  });
}

/** Raw label logits of every (state, question) from the service's batch path. */
export async function rawLogits(service: DecisionService, model: string, texts: string[]) {
  const requests = texts.map((state) => validateDecideRequest({ model, state, questions: QUESTIONS }));
  const outcomes = await service.decideRecords(model, requests);
  return outcomes.map((o) => {
    if (!o.ok || !o.raw) throw new Error('scoring failed');
    return o.raw;
  });
}

function sharpenedDraw(logits: ArrayLike<number>, tStar: number, random: () => number): number {
  const z = Array.from(logits, (l) => l / tStar);
  const m = Math.max(...z);
  const e = z.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  let u = random() * s;
  for (let i = 0; i < e.length; i++) {
    u -= e[i]!;
    if (u < 0) return i;
  }
  return e.length - 1;
}

/**
 * Writes a calibration file whose expected labels are drawn from softmax(logits / tStar): the
 * model's own distribution made sharper (tStar < 1), so the right temperature is tStar.
 */
export async function writeSharpenedData(file: string, texts: string[], raw: Awaited<ReturnType<typeof rawLogits>>, tStar: number, seed: number): Promise<void> {
  const random = seededRandom(seed);
  const lines = texts.map((state, i) => {
    const expected: Record<string, string> = {};
    raw[i]!.forEach((q) => {
      expected[q.questionId] = OPTION_KEYS[q.questionId]![sharpenedDraw(q.labelLogits, tStar, random)]!;
    });
    return JSON.stringify({ state, questions: QUESTIONS, expected });
  });
  await writeFile(file, `${lines.join('\n')}\n`);
}
