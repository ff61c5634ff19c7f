/**
 * The global setup's check that the addon under test was built from the native sources on disk
 * (test/helpers/native-build.ts): after it ran, the stamp matches; a stamp from other sources is
 * reported as stale.
 */
import { expect, it } from 'vitest';

import { nativeSourcesHash, staleAddonReason } from '../helpers/native-build.js';

it('the addon under test was built from the native sources on disk', () => {
  expect(nativeSourcesHash()).toMatch(/^[0-9a-f]{64}$/);
  expect(staleAddonReason()).toBeUndefined();
});

it('an addon built from other sources is stale', () => {
  expect(staleAddonReason('0'.repeat(64))).toBe('native/ or CMakeLists.txt changed since it was built');
});
