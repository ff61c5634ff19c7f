/** Error codes of the engine, stable across releases (err.code). */
export type EngineErrorCode =
  | 'ERR_MODEL_LOAD'
  | 'ERR_INPUT'
  | 'ERR_PROVIDER_UNAVAILABLE'
  | 'ERR_ORT_LOAD'
  | 'ERR_ENGINE_CLOSED'
  | 'ERR_OUT_OF_MEMORY'
  | 'ERR_RUNTIME';

/** Every failure of the engine, native or not, surfaces as an EngineError with a stable `.code`. */
export class EngineError extends Error {
  readonly code: EngineErrorCode;
  constructor(code: EngineErrorCode, message: string) {
    super(message);
    this.name = 'EngineError';
    this.code = code;
  }
}
