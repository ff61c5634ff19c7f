/**
 * `decision-engine/service`: the decision service in-process (models, questions, calibrated
 * answers), the model builder and calibration. Loads no HTTP server: that is `decision-engine/server`.
 */
// With the types its public methods return (metrics(), describeModel(), decideRecords()), which a dependent names.
export {
  DecisionService,
  type DecideContext,
  type DecisionServiceOptions,
  type DecisionResult,
  type ModelListing,
  type ModelEntry,
  type ServiceMetrics,
  type RecordOutcome,
} from '../service/decision-service.js';
export { ApiError, type ErrorCode } from '../api/errors.js';
// A decide body validated once, for decideNormalized(request, { signal }).
export { validateDecideRequest, type NormalizedDecideRequest, type ValidationLimits } from '../api/validate.js';
export type { DecideRequest, DecideResponse, Answer, Question } from '../api/schemas.js';
// From their own files, not the builder's index: its graph modules' declarations name the ONNX
// protobuf types, which a strict consumer could not read (models/builder/dtypes.ts).
export { makeModel, type MakeModelOptions, type MadeModel } from '../models/builder/make-model.js';
export { importModel, ImportError, type ImportModelOptions, type ImportedModel } from '../models/import/import-model.js';
export { PRESETS } from '../models/builder/presets.js';
export { calibrateModel, CalibrationError, type CalibrateOptions, type CalibrationReport } from '../calibration/run.js';
