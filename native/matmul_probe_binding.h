// The benchmark's MatMul probe as JavaScript calls it: timeMatMul(options) reads and checks the
// options, runs TimeMatMul (matmul_probe.h) and turns its errors into an Error with a stable `.code`.
#pragma once

#include <napi.h>

namespace decide {

// timeMatMul({ ortLibrary, modelPath, provider, threads, deviceId, minRuns, minSeconds, maxRuns }):
// seconds per run, as a Float64Array. Synchronous: a benchmark tool. A key left out keeps its
// default in MatMulProbeOptions.
Napi::Value TimeMatMulBinding(const Napi::CallbackInfo& info);

}  // namespace decide
