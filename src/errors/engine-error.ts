/**
 * The one error class of the engine and the model layer (src/engine, src/models): every failure
 * below the service boundary is an EngineError with a stable `.code`. These layers never speak
 * HTTP; toApiError() in src/api/errors.ts is the one place that turns a code into the API's
 * `{code, message}` and status. This file sits apart from engine/ so that models/ can throw it
 * without importing the engine.
 */

/**
 * Error codes of the engine, stable across releases (err.code); the README's table maps each to its API error.
 * @example
 * const retryLater: EngineErrorCode[] = ['ERR_QUEUE_FULL'];
 */
export type EngineErrorCode =
  /** A model directory (config, graph, tokenizer, template, calibration, labels) cannot be used. */
  | 'ERR_MODEL_LOAD'
  /** A checkpoint cannot be imported (importModel's ImportError): the message names the file or the field. */
  | 'ERR_MODEL_IMPORT'
  /** No installed model has that id or alias. */
  | 'ERR_MODEL_NOT_FOUND'
  /** Malformed input to the engine (not the caller's request: that is validated above). */
  | 'ERR_INPUT'
  /** The state does not fit in the model's context or the configured state limit. */
  | 'ERR_STATE_TOO_LONG'
  /** The scheduler's bounded live queue is full. */
  | 'ERR_QUEUE_FULL'
  | 'ERR_PROVIDER_UNAVAILABLE'
  | 'ERR_ORT_LOAD'
  | 'ERR_ENGINE_CLOSED'
  | 'ERR_OUT_OF_MEMORY'
  | 'ERR_RUNTIME';

/** Every code, once: a Record over the type, so the compiler holds it to the union both ways. */
const ENGINE_ERROR_CODES: Readonly<Record<EngineErrorCode, true>> = Object.freeze({
  ERR_MODEL_LOAD: true,
  ERR_MODEL_IMPORT: true,
  ERR_MODEL_NOT_FOUND: true,
  ERR_INPUT: true,
  ERR_STATE_TOO_LONG: true,
  ERR_QUEUE_FULL: true,
  ERR_PROVIDER_UNAVAILABLE: true,
  ERR_ORT_LOAD: true,
  ERR_ENGINE_CLOSED: true,
  ERR_OUT_OF_MEMORY: true,
  ERR_RUNTIME: true,
});

/** Whether `code` is one of the engine's (a system error's `ENOENT` or Node's `ERR_INVALID_ARG_TYPE` is not). */
export function isEngineErrorCode(code: unknown): code is EngineErrorCode {
  return typeof code === 'string' && Object.hasOwn(ENGINE_ERROR_CODES, code);
}

/**
 * Every failure of the engine, native or not, surfaces as an EngineError with a stable `.code`.
 * @example
 * try { await engine.score(groups); } catch (err) {
 *   if (err instanceof EngineError && err.code === 'ERR_STATE_TOO_LONG') shorten();
 * }
 */
export class EngineError extends Error {
  readonly code: EngineErrorCode;
  /**
   * The request field an input error is about, as the domain request names it (`questions["q1"]`):
   * the message starts with it, and each API dialect names it its own way (src/api).
   */
  readonly field?: string;
  constructor(code: EngineErrorCode, message: string, options?: { cause?: unknown; field?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EngineError';
    this.code = code;
    if (options?.field !== undefined) this.field = options.field;
  }
}

export function isEngineError(err: unknown): err is EngineError {
  return err instanceof EngineError;
}
