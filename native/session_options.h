// The ONNX Runtime session options every session of this addon uses (the decoder's and the
// benchmark's MatMul probe): full graph optimisation, one inter-op thread, the intra-op thread
// count, and for CUDA the provider on device `device_id` with TF32 off and, when given, `stream`
// (a cudaStream_t from device.h's CudaStream) as its compute stream, and CUDA graphs when asked;
// on the CPU, the engine's own operators (ops/).
// Throws EngineError(ERR_PROVIDER_UNAVAILABLE) when the CUDA provider cannot be loaded.
#pragma once

#include <onnxruntime_cxx_api.h>

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

}  // namespace decide
