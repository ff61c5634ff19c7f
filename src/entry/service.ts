/**
 * `decision-engine/service`: the decision service in-process (models, questions, calibrated
 * answers), the model builder and calibration. Loads no HTTP server: that is `decision-engine/server`.
 */
export { DecisionService, type DecideContext, type DecisionServiceOptions, type DecisionResult, type ModelListing } from '../service/decision-service.js';
export { ApiError, type ErrorCode } from '../api/errors.js';
export type { DecideRequest, DecideResponse, Answer, Question } from '../api/schemas.js';
export { makeModel, PRESETS } from '../models/builder/index.js';
export { calibrateModel, CalibrationError, type CalibrateOptions, type CalibrationReport } from '../calibration/run.js';
