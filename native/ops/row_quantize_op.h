// The engine's own ONNX Runtime operator `ai.decide.RowQuantize` (CPU), registered on every
// session this addon makes (op_domain.h). It is what an int8 model's u8 x s8 path
// (src/engine/int8-rewrite.ts) quantizes each token's activation row with, in one pass per row
// instead of the eight standard nodes that compute the same thing:
//   x: float [..., K]  ->  q: uint8 [..., K], scale: float [..., 1]
//   scale = max(max |x_i| * fp32(1/127), 1e-30)     (per row: ReduceMax(Abs), Mul, Max)
//   q_i   = round_half_even(x_i / scale) + 128      (Div, Round, Add, Cast; within 1..255)
// bit for bit what `--dtype int8` writes with standard ops (src/models/builder/quantize.ts), so a
// model answers the same through either form. Rows are cut among ONNX Runtime's intra-op threads
// of the session running it (called on that session's run thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include <onnxruntime_cxx_api.h>

namespace decide {

// One row: writes q, returns its scale. With AVX-512 where the CPU has it (picked once), else
// loops the compiler vectorizes; both give the same bits. The second is that fallback alone, for the
// C++ unit tests to compare against.
float QuantizeRow(const float* x, std::size_t k, std::uint8_t* q);
float QuantizeRowWithoutSimd(const float* x, std::size_t k, std::uint8_t* q);

// Adds RowQuantize (CPU) to `domain` (op_domain.cc).
void AddRowQuantizeOp(Ort::CustomOpDomain& domain);

}  // namespace decide
