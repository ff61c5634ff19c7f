/**
 * The worker side of TokenizerThread (tokenizer-thread.ts): loads one model's TextTokenizer and
 * answers `{text}` with its ids (the Int32Array's buffer moved, not copied) and `{vocabSize: true}`
 * with its vocabSize. A load that failed fails every request with the load's EngineError.
 */
import { workerData } from 'node:worker_threads';

import { serveRequests } from '../support/thread-client.js';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import { TextTokenizer } from './tokenizer.js';
import type { TokenizerReply, TokenizerRequest } from './tokenizer-thread.js';

const loading = TextTokenizer.load((workerData as { modelDir: string }).modelDir);
// Its failure is each request's answer; unobserved until the first one, it must not end the thread.
loading.catch(() => undefined);

serveRequests(
  async (request: TokenizerRequest): Promise<TokenizerReply> => {
    try {
      const tokenizer = await loading;
      return 'text' in request ? await tokenizer.encode(request.text) : tokenizer.vocabSize;
    } catch (err) {
      // Every failure crosses with an engine code (TokenizerThread rebuilds the EngineError).
      throw isEngineError(err) ? err : new EngineError('ERR_RUNTIME', (err as Error)?.message ?? String(err));
    }
  },
  (reply) => (typeof reply === 'number' ? [] : [reply.buffer as ArrayBuffer]),
);
