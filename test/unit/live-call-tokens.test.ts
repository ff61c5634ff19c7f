// How many tokens a live engine call holds: the scheduler's default, or one forward pass's token
// budget where that is larger (CUDA's default, or a budget set by option or DECIDE_TOKEN_BUDGET),
// so a request that fits one pass is not cut into several calls, each paying a launch.
import { afterEach, expect, it } from 'vitest';

import { liveCallTokens } from '../../src/runtime/model-runtime.js';
import { DEFAULT_SCHEDULER_OPTIONS } from '../../src/runtime/scheduler.js';

const saved = process.env.DECIDE_TOKEN_BUDGET;
afterEach(() => {
  if (saved === undefined) delete process.env.DECIDE_TOKEN_BUDGET;
  else process.env.DECIDE_TOKEN_BUDGET = saved;
});

it('cpu: the scheduler default (above the 8,192-token pass); cuda: its 65,536-token pass', () => {
  delete process.env.DECIDE_TOKEN_BUDGET;
  expect(liveCallTokens({})).toBe(DEFAULT_SCHEDULER_OPTIONS.maxCallTokens);
  expect(liveCallTokens({ provider: 'cpu' })).toBe(16384);
  expect(liveCallTokens({ provider: 'cuda' })).toBe(65536);
});

it('a token budget given by option or by DECIDE_TOKEN_BUDGET counts where it is larger', () => {
  delete process.env.DECIDE_TOKEN_BUDGET;
  expect(liveCallTokens({ tokenBudget: 100_000 })).toBe(100_000);
  expect(liveCallTokens({ tokenBudget: 1024 })).toBe(16384);
  process.env.DECIDE_TOKEN_BUDGET = '40000';
  expect(liveCallTokens({})).toBe(40000);
});
