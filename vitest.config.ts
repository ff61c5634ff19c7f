import { defineConfig } from 'vitest/config';

import SlowFirstSequencer from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native addons and ONNX Runtime sessions are happiest in child processes, not worker threads.
    pool: 'forks',
    maxWorkers: 2,
    // Each worker process runs its files one after another without a fresh process and module
    // graph per file: that start-up cost about 2 s per file (a third of the run on 2 cores). Test
    // files clean up after themselves (servers closed, env and timers restored, spies restored).
    isolate: false,
    sequence: { sequencer: SlowFirstSequencer },
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
