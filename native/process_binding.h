// The native surface's process-level functions: probeLibrary(name), whether the dynamic loader can
// load a shared library; compileOwnKernels(arch), whether NVRTC compiles the engine's own CUDA
// kernels; and exitNow(code), the immediate exit.
#pragma once

#include <napi.h>

namespace decide {

// probeLibrary(name): null when the loader can load `name`, else its message (see ProbeSharedLibrary).
Napi::Value ProbeLibrary(const Napi::CallbackInfo& info);

// compileOwnKernels(arch): null when NVRTC (found as the engine finds it) compiles the engine's own
// CUDA kernels for `arch` ("compute_75", "sm_90", ...), else why not. Needs no card. Runs on the
// calling (JavaScript) thread: about a second.
Napi::Value CompileOwnKernels(const Napi::CallbackInfo& info);

// exitNow(code): ends the process at once with `code`, running no exit handlers. process.exit()
// first joins libuv's thread pool, so it waits for a forward pass in flight (seconds); the
// operator's second signal must not. What is durable (SQLite, files) is as after a kill.
Napi::Value ExitNow(const Napi::CallbackInfo& info);

}  // namespace decide
