/**
 * The worker side of TokenizerThread (tokenizer-thread.ts): loads one model's TextTokenizer and
 * answers `{id, text}` with `{id, ids}` (the Int32Array's buffer transferred) or `{id, error}`.
 * Its first message says whether the load worked: `{ready: true, vocabSize}` or `{ready: false, error}`.
 */
import { parentPort, workerData } from 'node:worker_threads';

import { isEngineError } from '../errors/engine-error.js';
import { TextTokenizer } from './tokenizer.js';

const port = parentPort!;
const failure = (err: unknown) => ({ code: isEngineError(err) ? err.code : 'ERR_RUNTIME', message: (err as Error)?.message ?? String(err) });

let tokenizer: TextTokenizer | undefined;
try {
  tokenizer = await TextTokenizer.load((workerData as { modelDir: string }).modelDir);
} catch (err) {
  // The main side ends this thread once it has read why.
  port.postMessage({ ready: false, error: failure(err) });
}
if (tokenizer) serve(tokenizer);

function serve(tokenizer: TextTokenizer): void {
  port.on('message', async ({ id, text }: { id: number; text: string }) => {
    try {
      const ids = await tokenizer.encode(text);
      port.postMessage({ id, ids }, [ids.buffer as ArrayBuffer]);
    } catch (err) {
      port.postMessage({ id, error: failure(err) });
    }
  });
  port.postMessage({ ready: true, vocabSize: tokenizer.vocabSize });
}
