// Registers the native surface: the engine class, the shared-library probe, the benchmark's
// MatMul probe and the immediate exit. Nothing else lives here.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <napi.h>

#include "engine_binding.h"
#include "errors.h"
#include "matmul_probe.h"
#include "ort_runtime.h"

namespace {

// probeLibrary(name): null when the loader can load `name`, else its message (see ProbeSharedLibrary).
Napi::Value ProbeLibrary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "probeLibrary(name): name must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::string why = decide::ProbeSharedLibrary(info[0].As<Napi::String>().Utf8Value());
  return why.empty() ? env.Null() : Napi::String::New(env, why);
}

// timeMatMul({ ortLibrary, modelPath, provider, threads, deviceId, minRuns, minSeconds, maxRuns }):
// seconds per run of a device-resident MatMul graph (matmul_probe.h). Synchronous: a benchmark tool.
Napi::Value TimeMatMul(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    decide::MakeError(env, decide::kErrInput, "timeMatMul(options) needs an options object").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object o = info[0].As<Napi::Object>();
  auto text = [&](const char* key, const char* fallback) {
    Napi::Value v = o.Get(key);
    return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string(fallback);
  };
  // A NaN, infinite, negative or huge value would be undefined behaviour in the int casts below.
  auto number = [&](const char* key, double fallback) {
    Napi::Value v = o.Get(key);
    if (v.IsUndefined()) return fallback;
    const double n = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
    if (!std::isfinite(n) || n < 0 || n > 1e9) {
      throw decide::EngineError(decide::kErrInput, std::string("options.") + key + " must be a finite number from 0 to 1e9");
    }
    return n;
  };
  decide::MatMulProbeOptions options;
  try {
    options.model_path = text("modelPath", "");
    options.provider = text("provider", "cpu");
    options.intra_op_threads = static_cast<int>(number("threads", 0));
    options.device_id = static_cast<int>(number("deviceId", 0));
    options.min_runs = static_cast<int>(number("minRuns", 3));
    options.min_seconds = number("minSeconds", 0.3);
    options.max_runs = static_cast<int>(number("maxRuns", 200));
    if (options.model_path.empty()) throw decide::EngineError(decide::kErrInput, "options.modelPath is required");
    if (options.min_runs < 1 || options.max_runs < options.min_runs) {
      throw decide::EngineError(decide::kErrInput, "options.minRuns must be at least 1 and at most options.maxRuns");
    }
    decide::EnsureOrtLoaded(text("ortLibrary", ""));
    const std::vector<double> seconds = decide::TimeMatMul(options);
    Napi::Float64Array out = Napi::Float64Array::New(env, seconds.size());
    for (size_t i = 0; i < seconds.size(); ++i) out[i] = seconds[i];
    return out;
  } catch (const decide::EngineError& e) {
    decide::MakeError(env, e.Code(), e.what()).ThrowAsJavaScriptException();
  } catch (const std::exception& e) {
    decide::MakeError(env, decide::kErrRuntime, e.what()).ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

}  // namespace

// exitNow(code): ends the process at once with `code`, running no exit handlers. process.exit()
// first joins libuv's thread pool, so it waits for a forward pass in flight (seconds); the
// operator's second signal must not. What is durable (SQLite, files) is as after a kill.
Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  std::fflush(nullptr);
  std::_Exit(code);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeEngine", decide::EngineBinding::Define(env));
  exports.Set("probeLibrary", Napi::Function::New(env, ProbeLibrary, "probeLibrary"));
  exports.Set("timeMatMul", Napi::Function::New(env, TimeMatMul, "timeMatMul"));
  exports.Set("exitNow", Napi::Function::New(env, ExitNow, "exitNow"));
  return exports;
}

NODE_API_MODULE(decide_native, Init)
