/**
 * dropOutputWhenReaderCloses (src/cli/closed-output.ts) watches stdout and stderr once per process,
 * however often a command's main() runs in it: each call used to add another 'error' listener, and
 * the eleventh made Node warn of a listener leak (the calibration CLI tests run main() in-process).
 */
import { expect, it } from 'vitest';

import { dropOutputWhenReaderCloses } from '../../src/cli/closed-output.js';

it('adds at most one error listener to stdout and stderr, however often it is called', () => {
  dropOutputWhenReaderCloses();
  const before = [process.stdout.listenerCount('error'), process.stderr.listenerCount('error')];
  for (let i = 0; i < 20; i++) dropOutputWhenReaderCloses();
  expect([process.stdout.listenerCount('error'), process.stderr.listenerCount('error')]).toEqual(before);
});
