// Registers the native surface: the engine class (engine_binding.h), the benchmark's MatMul probe
// (matmul_probe_binding.h), the shared-library probe and the immediate exit (process_binding.h).
// Nothing else lives here.
#include <napi.h>

#include "engine_binding.h"
#include "matmul_probe_binding.h"
#include "process_binding.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeEngine", decide::EngineBinding::Define(env));
  exports.Set("probeLibrary", Napi::Function::New(env, decide::ProbeLibrary, "probeLibrary"));
  exports.Set("compileOwnKernels", Napi::Function::New(env, decide::CompileOwnKernels, "compileOwnKernels"));
  exports.Set("timeMatMul", Napi::Function::New(env, decide::TimeMatMulBinding, "timeMatMul"));
  exports.Set("exitNow", Napi::Function::New(env, decide::ExitNow, "exitNow"));
  return exports;
}

}  // namespace

NODE_API_MODULE(decide_native, Init)
