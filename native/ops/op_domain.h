// The engine's own ONNX Runtime operators, in the domain `ai.decide`, added to every session this
// addon makes (session_options.cc): a graph that uses none is not affected.
//   RowQuantize (CPU)                 int8 models' activation quantization (row_quantize_op.h)
//   HeadNormRotary, SiluMul (CPU, CUDA; fp32, fp16)   the fused graph's own-kernels form (fused_ops.h)
#pragma once

#include <onnxruntime_cxx_api.h>

namespace decide {

inline constexpr const char* kDecideOpDomain = "ai.decide";

// Made once and never freed (sessions keep pointers into it, and may outlive static destruction).
OrtCustomOpDomain* DecideOpDomain();

}  // namespace decide
