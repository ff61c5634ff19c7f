// The JavaScript face of the engine: class NativeEngine { load(options), score(batch), info(),
// counters(), clearPrefixCache(), close() }. This is the ONLY file (with addon.cc) that sees N-API;
// it turns JS values into plain C++ batons on the main thread, runs the work in one AsyncWorker per
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
