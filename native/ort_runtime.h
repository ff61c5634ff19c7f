// Loads ONNX Runtime at run time. The addon does not link libonnxruntime: the library bundled with
// onnxruntime-node (or the one named by DECIDE_ORT_LIBRARY, e.g. a CUDA-enabled build on GPU hosts)
// is dlopen'ed once per process and the C++ API is initialised from its OrtGetApiBase(), with ONNX
// Runtime's telemetry turned off first unless the operator chose otherwise (ort_runtime.cc says how).
// Called on the load AsyncWorker's thread, and on the JS thread by the MatMul probe and
// EngineBinding::Info; guarded by a mutex. The Ort::Env lives for the
// whole process (never released: ort_runtime.cc says why): ORT wants exactly one, and sessions
// must not outlive it.
#pragma once

#include <string>

#include <onnxruntime_cxx_api.h>

namespace decide {

// Idempotent for the same path; a different path after the first load is an error (ORT cannot be
// loaded twice into one process). Throws EngineError(ERR_ORT_LOAD).
void EnsureOrtLoaded(const std::string& library_path);

// The process-wide environment. EnsureOrtLoaded must have succeeded first.
Ort::Env& OrtEnvironment();

// Lowers the environment's log severity to `severity` (0 verbose .. 4 fatal) when it is below the
// current one; never raises it. Kernels log through the environment's default logger, not the
// session's (ONNX Runtime's CUDA Attention says there which kernel it picked), so a session asked
// for verbose logs gets them from its kernels too. Process-wide: every later session logs as much.
void LowerOrtLogSeverity(int severity);

// The path of the loaded library ("" before the first load).
std::string LoadedOrtLibrary();

// Whether the dynamic loader finds and loads the shared library `name` the way a NEEDED entry is
// found (LD_LIBRARY_PATH, the ld.so cache, the default paths): "" when it does, else the loader's
// message. Lets the CUDA check name a missing piece (driver, libcudart, cuBLAS) before ONNX Runtime
// reports a generic provider failure.
std::string ProbeSharedLibrary(const std::string& name);

}  // namespace decide
