#include "matmul_probe_binding.h"

#include <exception>
#include <string>
#include <vector>

#include "engine_binding.h"
#include "errors.h"
#include "matmul_probe.h"
#include "ort_runtime.h"
#include "provider.h"

namespace decide {
namespace {

// A NaN, infinite, negative or huge value would be undefined behaviour in the int casts below.
constexpr double kMaxProbeNumber = 1e9;

// options[key] when it is a string, else `fallback`.
std::string TextOr(Napi::Object options, const char* key, std::string fallback) {
  Napi::Value value = options.Get(key);
  return value.IsString() ? value.As<Napi::String>().Utf8Value() : fallback;
}

// options[key] checked (from 0 to kMaxProbeNumber), or `fallback` when the key is left out.
double NumberOr(Napi::Env env, Napi::Object options, const char* key, double fallback) {
  if (options.Get(key).IsUndefined()) return fallback;
  return RequiredNumber(env, options, key, 0, kMaxProbeNumber, false);
}

MatMulProbeOptions ReadProbeOptions(Napi::Env env, Napi::Object o) {
  MatMulProbeOptions options;
  options.model_path = TextOr(o, "modelPath", "");
  if (o.Get("provider").IsString()) options.provider = ParseProvider(o.Get("provider").As<Napi::String>().Utf8Value());
  options.intra_op_threads = static_cast<int>(NumberOr(env, o, "threads", options.intra_op_threads));
  options.device_id = static_cast<int>(NumberOr(env, o, "deviceId", options.device_id));
  options.min_runs = static_cast<int>(NumberOr(env, o, "minRuns", options.min_runs));
  options.min_seconds = NumberOr(env, o, "minSeconds", options.min_seconds);
  options.max_runs = static_cast<int>(NumberOr(env, o, "maxRuns", options.max_runs));
  if (options.model_path.empty()) throw EngineError(kErrInput, "options.modelPath is required");
  if (options.min_runs < 1 || options.max_runs < options.min_runs) {
    throw EngineError(kErrInput, "options.minRuns must be at least 1 and at most options.maxRuns");
  }
  return options;
}

}  // namespace

Napi::Value TimeMatMulBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    MakeError(env, kErrInput, "timeMatMul(options) needs an options object").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object o = info[0].As<Napi::Object>();
  try {
    const MatMulProbeOptions options = ReadProbeOptions(env, o);
    EnsureOrtLoaded(TextOr(o, "ortLibrary", ""));
    const std::vector<double> seconds = TimeMatMul(options);
    Napi::Float64Array out = Napi::Float64Array::New(env, seconds.size());
    for (size_t i = 0; i < seconds.size(); ++i) out[i] = seconds[i];
    return out;
  } catch (const Napi::Error& e) {
    // An option refused by RequiredNumber: already a coded Error.
    e.ThrowAsJavaScriptException();
  } catch (const std::exception&) {
    const CodedMessage error = CodedCurrentException();
    MakeError(env, error.code, error.message).ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

}  // namespace decide
