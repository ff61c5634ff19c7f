/**
 * Runs once before any test worker starts: builds the tiny test model (generated, never committed;
 * rebuilt only when the builder changes). The TypeScript is not compiled here: vitest runs it
 * directly, and the tests that spawn bin/decide.js compile dist/ when it is stale (test/helpers/bin.ts).
 */
import { tinyModelDir } from './helpers/tiny-model.js';

export default async function setup(): Promise<void> {
  await tinyModelDir();
}
