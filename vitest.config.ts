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
  },
});
