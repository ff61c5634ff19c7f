// The ONNX Runtime session options every session of this addon uses (the decoder's and the
// benchmark's MatMul probe): full graph optimisation, one inter-op thread, the intra-op thread
// count, and the CUDA provider on device `device_id` with TF32 off when provider is "cuda".
// Throws EngineError: ERR_PROVIDER_UNAVAILABLE when the CUDA provider cannot be loaded, ERR_INPUT
// for an unknown provider.
#pragma once

#include <string>

#include <onnxruntime_cxx_api.h>

namespace decide {

Ort::SessionOptions MakeSessionOptions(const std::string& provider, int intra_op_threads, int device_id);

}  // namespace decide
