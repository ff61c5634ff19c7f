// Registers the native surface: the engine class and the shared-library probe. Nothing else lives here.
#include <napi.h>

#include "engine_binding.h"
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

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeEngine", decide::EngineBinding::Define(env));
  exports.Set("probeLibrary", Napi::Function::New(env, ProbeLibrary, "probeLibrary"));
  return exports;
}

NODE_API_MODULE(decide_native, Init)
