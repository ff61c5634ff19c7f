/**
 * Runs once before any test worker starts: rebuilds the native addon when native/ changed since its
 * last build (test/helpers/native-build.ts), so no test runs an old addon; then builds the tiny test
 * model (generated, never committed; rebuilt only when the builder changes). The TypeScript is not
 * compiled here: vitest runs it directly, and the tests that spawn bin/decide.js compile dist/ when
 * it is stale (test/helpers/bin.ts).
 */
import { ensureCurrentAddon } from './helpers/native-build.js';
import { tinyModelDir } from './helpers/tiny-model.js';

export default async function setup(): Promise<void> {
  await ensureCurrentAddon();
  await tinyModelDir();
}
