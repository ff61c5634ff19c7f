import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native addons and ONNX Runtime sessions are happiest in child processes, not worker threads.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    globalSetup: ['test/global-setup.ts'],
    // Two test files run at once on a 2-core machine, most of them with engines in-process or in
    // spawned `decide` processes (which inherit this): one ONNX Runtime thread each keeps them from
    // spinning against each other. The answers do not depend on the thread count. Tests that set
    // threads themselves keep theirs.
    env: { DECIDE_THREADS: '1' },
  },
});
