// Registers the native engine class. Nothing else lives here.
#include <napi.h>

#include "engine_binding.h"

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NativeEngine", decide::EngineBinding::Define(env));
  return exports;
}

NODE_API_MODULE(decide_native, Init)
