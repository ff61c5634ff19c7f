/**
 * The library surface: import { DecisionService, Engine, createServer } from 'decision-engine'.
 */
export { Engine, type EngineLoadOptions, type ScoreGroup, type ScoreSuffix, type SuffixScore, type ScoreBatchResult, type EngineCounters, type EngineInfo } from './engine/engine.js';
export { EngineError, type EngineErrorCode } from './errors/engine-error.js';
export { TextTokenizer } from './runtime/tokenizer.js';
export { DecisionService, type DecisionServiceOptions, type ModelListing } from './service/decision-service.js';
export { ApiError, type ErrorCode } from './api/errors.js';
export type { DecideRequest, DecideResponse, Answer, Question } from './api/schemas.js';
export { makeModel, PRESETS } from './models/builder/index.js';
export { createServer, decisionApp, type ServerOptions } from './server/app.js';
export { calibrateModel, CalibrationError, type CalibrateOptions, type CalibrationReport } from './calibration/run.js';
