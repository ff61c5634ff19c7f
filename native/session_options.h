// The ONNX Runtime session options every session of this addon uses (the decoder's and the
// benchmark's MatMul probe): full graph optimisation, one inter-op thread, the intra-op thread
// count, and for CUDA the provider on device `device_id` with TF32 off and, when given, `stream`
// (a cudaStream_t from device.h's CudaStream) as its compute stream, and CUDA graphs when asked;
// on every provider, the engine's own operators (ops/: CPU and CUDA kernels).
// Throws EngineError(ERR_PROVIDER_UNAVAILABLE) when the CUDA provider cannot be loaded.
#pragma once

#include <memory>
#include <string>

#include <onnxruntime_cxx_api.h>

#include "device/device.h"
#include "provider.h"

namespace decide {

struct SessionSettings {
  Provider provider = Provider::kCpu;
  int intra_op_threads = 0;
  int device_id = 0;
  void* cuda_stream = nullptr;
  // ONNX Runtime's own log severity for this session (0 verbose .. 4 fatal), always set by the
  // caller: the decoder from its options (ortLogLevel), the MatMul probe from its own (matmul_probe.h).
  // 1 (warnings) shows whether it placed Memcpy nodes between providers.
  int log_severity = 0;
  // CUDA: let runs be captured as CUDA graphs and replayed (the run option gpu_graph_id picks one).
  bool cuda_graphs = false;
};

Ort::SessionOptions MakeSessionOptions(const SessionSettings& settings);

// A session over `model_path` with `settings`, as every session of the addon is opened: the
// environment's log severity lowered to the session's (ORT filters a session's messages by both),
// on CUDA the session's compute stream made first into *stream (the caller keeps it alive longer
// than the session), ORT's profiler on when `profile_prefix` is not empty. Throws
// EngineError(ERR_MODEL_LOAD) naming the file when ORT refuses the model.
std::unique_ptr<Ort::Session> OpenSession(SessionSettings settings, const std::string& model_path,
                                          std::shared_ptr<CudaStream>* stream, const std::string& profile_prefix = "");

}  // namespace decide
