// The JavaScript face of the engine: class NativeEngine { load(options), score(batch), info(),
// counters(), clearPrefixCache(), close() }. N-API is seen only here, in addon.cc (which registers
// it) and in the two small bindings beside it (matmul_probe_binding.h, process_binding.h); this file
// turns JS values into plain C++ batons on the main thread, runs the work in one AsyncWorker per
// call (Execute never touches N-API), and turns every C++ exception into a rejected Promise whose
// Error has a stable `.code`. Typed arrays cross zero-copy and are kept alive by the worker.
// The whole surface is typed once, in src/engine/native.ts.
#pragma once

#include <memory>
#include <string>

#include <napi.h>

#include "scorer.h"

namespace decide {

// A JS Error carrying the stable `.code` (errors.h) that every rejection of the addon has.
Napi::Error MakeError(Napi::Env env, const std::string& code, const std::string& message);

// options[key] as a number from `min` to `max` (an integer when `integer`); throws MakeError's
// ERR_INPUT Error naming the key when it is missing, not a number, not finite or out of range.
double RequiredNumber(Napi::Env env, Napi::Object options, const char* key, double min, double max, bool integer);

class EngineBinding : public Napi::ObjectWrap<EngineBinding> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit EngineBinding(const Napi::CallbackInfo& info);

 private:
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Score(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Counters(const Napi::CallbackInfo& info);
  Napi::Value ClearPrefixCache(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  // Throws a JS Error with .code when the engine is closed or not loaded.
  std::shared_ptr<Scorer> RequireScorer(Napi::Env env);

  std::shared_ptr<Scorer> scorer_;
  bool loading_ = false;
  bool closed_ = false;
};

}  // namespace decide
