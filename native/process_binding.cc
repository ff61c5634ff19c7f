#include "process_binding.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "device/cuda_module.h"
#include "errors.h"
#include "ort_runtime.h"

namespace decide {

Napi::Value ProbeLibrary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "probeLibrary(name): name must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::string why = ProbeSharedLibrary(info[0].As<Napi::String>().Utf8Value());
  return why.empty() ? env.Null() : Napi::String::New(env, why);
}

Napi::Value CompileOwnKernels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "compileOwnKernels(arch): arch must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  try {
    CompileDeviceKernels(info[0].As<Napi::String>().Utf8Value());
    return env.Null();
  } catch (const std::exception& e) {
    return Napi::String::New(env, e.what());
  }
}

Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 1;
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace decide
