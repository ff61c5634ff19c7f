/**
 * Shared by the API and e2e tests: a models directory holding the tiny test model under chosen ids
 * (symlinks, so nothing is copied), request builders, and checks of the decide response rules.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { expect } from 'vitest';

import { tinyModelDir } from '../helpers/tiny-model.js';

export const TEST_KEY = 'test-key-7f3a9c2e51';
export const OTHER_KEY = 'other-key-0b8d4e6a93';
export const AUTH = { authorization: `Bearer ${TEST_KEY}` };

export interface TempDirs {
  root: string;
  modelsDir: string;
  dataDir: string;
  cleanup(): void;
}

/** A temp root with models/<id> -> the tiny model for each id, and an empty data dir path. */
export async function tempModels(ids: string[] = ['svc-alpha-2026-10']): Promise<TempDirs> {
  const tiny = await tinyModelDir();
  const root = mkdtempSync(path.join(os.tmpdir(), 'decide-api-'));
  const modelsDir = path.join(root, 'models');
  mkdirSync(modelsDir);
  for (const id of ids) symlinkSync(tiny, path.join(modelsDir, id), 'dir');
  return {
    root,
    modelsDir,
    dataDir: path.join(root, 'data'),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

export type Questions = Record<string, { type: string; instructions: string; criteria?: Record<string, string> }>;

export const MIXED_QUESTIONS: Questions = {
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
  refund_described: {
    type: 'noul',
    instructions: 'Is the customer angry?',
    criteria: { no: 'calm or neutral', yes: 'angry or upset' },
  },
  topic: {
    type: 'choice',
    instructions: 'What is the ticket about?',
    criteria: { shipping: 'Delivery and parcels', billing: 'Charges and invoices', other: 'Anything else' },
  },
  urgency: {
    type: 'score',
    instructions: 'How urgent is it?',
    criteria: { '2': 'urgent', '0': 'not urgent', '1': 'somewhat urgent' },
  },
};

export function decideBody(state: unknown, questions: Questions = MIXED_QUESTIONS, model = 'svc-alpha'): Record<string, unknown> {
  return { model, state, questions };
}

/** `n` options a, b, c, ... for a choice question. */
export function letters(n: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`opt_${String.fromCharCode(97 + (i % 26))}${i >= 26 ? i : ''}`] = `option ${i}`;
  return out;
}

export interface AnswerLike {
  type: string;
  probs: Record<string, number>;
  top: string;
  confidence: number;
}

/** The spec's rules 1-4 for one response to `questions`. */
export function expectValidAnswers(answers: Record<string, AnswerLike>, questions: Questions): void {
  expect(Object.keys(answers).sort()).toEqual(Object.keys(questions).sort());
  for (const [id, q] of Object.entries(questions)) {
    const a = answers[id]!;
    expect(a.type).toBe(q.type);
    const expectedKeys = q.criteria ? Object.keys(q.criteria) : ['no', 'yes'];
    expect(Object.keys(a.probs).sort()).toEqual([...expectedKeys].sort());
    let sum = 0;
    for (const p of Object.values(a.probs)) {
      expect(Number.isFinite(p)).toBe(true);
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThanOrEqual(1);
      sum += p;
    }
    expect(Math.abs(sum - 1)).toBeLessThanOrEqual(1e-6);
    const max = Math.max(...Object.values(a.probs));
    expect(a.probs[a.top]).toBe(max);
    expect(a.confidence).toBe(a.probs[a.top]);
  }
}

/**
 * Same answers (same option keys), probabilities within `tol`. Probabilities are rounded to 6
 * decimals, so two values a hair apart can land one step (1e-6) apart; 1e-12 absorbs the binary
 * representation of that decimal step.
 */
export function expectSameAnswers(a: Record<string, AnswerLike>, b: Record<string, AnswerLike>, tol = 1e-6): void {
  expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
  for (const id of Object.keys(a)) {
    expect(Object.keys(a[id]!.probs)).toEqual(Object.keys(b[id]!.probs));
    for (const k of Object.keys(a[id]!.probs)) {
      expect(Math.abs(a[id]!.probs[k]! - b[id]!.probs[k]!)).toBeLessThanOrEqual(tol + 1e-12);
    }
  }
}

export const ERROR_SHAPE_KEYS = ['code', 'message', 'request_id'];

/** An error body in the spec's shape, with the request id of the x-request-id header. */
export function expectErrorShape(body: unknown, code: string, requestIdHeader: string | undefined): void {
  expect(body).toBeTypeOf('object');
  const b = body as Record<string, unknown>;
  expect(Object.keys(b).sort()).toEqual(ERROR_SHAPE_KEYS);
  expect(b.code).toBe(code);
  expect(typeof b.message).toBe('string');
  expect((b.message as string).length).toBeGreaterThan(0);
  expect(b.request_id).toBe(requestIdHeader);
  expect(b.request_id).toMatch(/^(dec|req)_[0-9A-HJKMNP-TV-Z]{26}$/);
}

/** A string state of about `n` tokens for the Qwen tokenizer (" a" is one token). */
export function longState(n: number): string {
  return 'a' + ' a'.repeat(n - 1);
}
