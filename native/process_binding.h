// The native surface's two process-level functions: probeLibrary(name), whether the dynamic
// loader can load a shared library, and exitNow(code), the immediate exit.
#pragma once

#include <napi.h>

namespace decide {

// probeLibrary(name): null when the loader can load `name`, else its message (see ProbeSharedLibrary).
Napi::Value ProbeLibrary(const Napi::CallbackInfo& info);

// exitNow(code): ends the process at once with `code`, running no exit handlers. process.exit()
// first joins libuv's thread pool, so it waits for a forward pass in flight (seconds); the
// operator's second signal must not. What is durable (SQLite, files) is as after a kill.
Napi::Value ExitNow(const Napi::CallbackInfo& info);

}  // namespace decide
