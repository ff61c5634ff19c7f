#include "ort_runtime.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>

#include "errors.h"

namespace decide {
namespace {

std::mutex g_mutex;
std::string g_library_path;
// Never destroyed: releasing ORT's environment at process exit unloads the execution providers
// (the CUDA provider's library and, with it, the CUDA runtime's state) while static destructors and
// any engine the program did not close may still hold device memory, sessions or streams: a
// process that loaded and closed two CUDA engines then dies at exit ("corrupted double-linked
// list"). The process's end reclaims it.
Ort::Env* g_env = nullptr;
int g_env_severity = ORT_LOGGING_LEVEL_ERROR;

using GetApiBaseFn = const OrtApiBase* (*)();

// ONNX Runtime's official builds for Linux and macOS (1.29 and newer; onnxruntime-node's, the one
// shipped in prebuilds/) carry Microsoft's 1DS telemetry client, started when the first environment
// is created: it writes mat-debug-<pid>.log and .ses into $TMPDIR (`:memory:.ses` into the working
// directory where it has no writable home), a device id and an event queue for upload under
// ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, never removed. ORT_DISABLE_TELEMETRY=1 is its
// only switch that stops all of it, and ONNX Runtime reads it when that environment is created:
// DisableTelemetryEvents() on the environment comes after the files and leaves the uploader running.
// Set here, in the C environment, not from JavaScript: a worker thread's process.env is a copy that
// never reaches the environment ONNX Runtime reads. An operator's own value (0 keeps ONNX Runtime's
// telemetry) is left as it is. Children the process starts later inherit the setting.
void DisableOrtTelemetryUnlessChosen() {
  setenv("ORT_DISABLE_TELEMETRY", "1", /*overwrite=*/0);
}

}  // namespace

void EnsureOrtLoaded(const std::string& library_path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_env) {
    if (library_path != g_library_path) {
      throw EngineError(kErrOrtLoad, "ONNX Runtime is already loaded from " + g_library_path +
                                         "; cannot load a second copy from " + library_path);
    }
    return;
  }
  DisableOrtTelemetryUnlessChosen();
  // RTLD_GLOBAL so that provider libraries (libonnxruntime_providers_cuda.so) resolve against it.
  void* handle = dlopen(library_path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw EngineError(kErrOrtLoad, "cannot load ONNX Runtime from " + library_path + ": " +
                                       (why != nullptr ? why : "unknown error"));
  }
  auto get_api_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
  if (get_api_base == nullptr) {
    throw EngineError(kErrOrtLoad, library_path + " does not export OrtGetApiBase");
  }
  const OrtApiBase* base = get_api_base();
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    throw EngineError(kErrOrtLoad, std::string("ONNX Runtime ") + base->GetVersionString() + " at " +
                                       library_path + " does not serve API version " +
                                       std::to_string(ORT_API_VERSION) + " (need ONNX Runtime 1." +
                                       std::to_string(ORT_API_VERSION) + " or newer)");
  }
  Ort::InitApi(api);
  g_env = new Ort::Env(static_cast<OrtLoggingLevel>(g_env_severity), "decide");
  g_library_path = library_path;
}

Ort::Env& OrtEnvironment() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_env) throw EngineError(kErrOrtLoad, "ONNX Runtime is not loaded");
  return *g_env;
}

void LowerOrtLogSeverity(int severity) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_env) throw EngineError(kErrOrtLoad, "ONNX Runtime is not loaded");
  if (severity >= g_env_severity) return;
  g_env->UpdateEnvWithCustomLogLevel(static_cast<OrtLoggingLevel>(severity));
  g_env_severity = severity;
}

std::string ProbeSharedLibrary(const std::string& name) {
  void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle != nullptr) {
    dlclose(handle);
    return "";
  }
  const char* why = dlerror();
  return why != nullptr ? why : "unknown error";
}

std::string LoadedOrtLibrary() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_library_path;
}

}  // namespace decide
