/**
 * DECIDE_THREADS: the engine's thread count when the caller names none. An invalid value is a clear
 * error at load, never a silent fallback.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const saved = process.env.DECIDE_THREADS;
afterEach(() => {
  if (saved === undefined) delete process.env.DECIDE_THREADS;
  else process.env.DECIDE_THREADS = saved;
});

describe('DECIDE_THREADS', () => {
  for (const bad of ['0', 'two', '1.5', '-1', '2000']) {
    it(`'${bad}' is refused at load, naming the variable and the range`, async () => {
      process.env.DECIDE_THREADS = bad;
      await expect(Engine.load({ modelDir: await tinyModelDir() })).rejects.toMatchObject({
        code: 'ERR_INPUT',
        message: `DECIDE_THREADS must be an integer from 1 to 1024, got '${bad}'`,
      });
    });
  }

  it('a valid value loads, and an explicit threads option wins over an invalid one', async () => {
    process.env.DECIDE_THREADS = '1';
    const one = await Engine.load({ modelDir: await tinyModelDir() });
    const [scores] = await one.score([{ prefix: Int32Array.of(1, 2, 3), suffixes: [{ tokens: Int32Array.of(4), labels: Int32Array.of(5, 6) }] }]);
    one.close();
    process.env.DECIDE_THREADS = 'two';
    const two = await Engine.load({ modelDir: await tinyModelDir(), threads: 2 });
    const [again] = await two.score([{ prefix: Int32Array.of(1, 2, 3), suffixes: [{ tokens: Int32Array.of(4), labels: Int32Array.of(5, 6) }] }]);
    two.close();
    // The answer does not depend on the thread count.
    expect(Math.max(...again![0]!.labelLogits.map((x, i) => Math.abs(x - scores![0]!.labelLogits[i]!)))).toBeLessThan(1e-5);
  });
});
