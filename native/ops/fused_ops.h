// The engine's own fused operators for the fused decoder graph's "own kernels" form
// (src/models/builder/fused-layers.ts, DecoderFeatures.ownKernels), each with a CPU kernel (below)
// and a CUDA kernel (device_kernels.cu, compiled by NVRTC), for fp32 and fp16:
//
//   ai.decide.HeadNormRotary(q, k, q_scale, k_scale, position_ids, cos_cache, sin_cache) -> (q_out, k_out)
//     q [B, S, q_heads * D], k [B, S, k_heads * D], scales [D], position_ids int64 [B, S],
//     cos_cache / sin_cache [P, D / 2]; attributes epsilon (float), normalize (int, default 1).
//     Every head's row x of D values: n = x / sqrt(mean(x^2) + epsilon) * scale (RMSNorm, as
//     SimplifiedLayerNormalization over the last axis; with normalize 0, n = x * scale: the
//     families without q/k norms, whose two RotaryEmbeddings it then replaces), then rotary with the rotate-half layout
//     (ONNX Runtime's RotaryEmbedding, interleaved = 0): for i < D / 2, with c = cos[pos, i] and
//     s = sin[pos, i], out_i = n_i c - n_{i+D/2} s and out_{i+D/2} = n_{i+D/2} c + n_i s.
//     What Qwen3's q_norm / k_norm and rotary take 2 x (Reshape, SimplifiedLayerNormalization,
//     Reshape, RotaryEmbedding) for, in one pass that reads q and k once and writes them once. All
//     arithmetic in fp32; fp16 is rounded once, at the store. A position outside [0, P) is refused
//     on the CPU (as ONNX Runtime's RotaryEmbedding does) and clamped on CUDA.
//
//   ai.decide.SiluMul(gate, up) -> out    out = gate * sigmoid(gate) * up, elementwise, same shapes
//     (QuickGelu with alpha 1 and a Mul: one pass instead of two).
//
// Threads and buffers: a kernel is made when its session is (its CUDA module then, where that thread
// has a CUDA context) and runs on the thread that runs the session; a CPU kernel cuts its work among
// that session's intra-op threads, a CUDA kernel launches on the session's compute stream and does
// not wait. Inputs and outputs are ONNX Runtime's; the operator objects live as long as the process
// (op_domain.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include <onnxruntime_cxx_api.h>

namespace decide {

struct HeadNormRotaryShape {
  int64_t tokens = 0;  // B * S
  int64_t q_heads = 0;
  int64_t k_heads = 0;
  int64_t head_dim = 0;
  int64_t table_rows = 0;  // P
  float epsilon = 0.0f;
  bool normalize = true;  // false: no RMSNorm, only the scale and rotary
};

// The largest head_dim the CUDA kernel holds in registers (device_kernels.cu); the builder writes
// the op only up to it, and the op refuses more.
inline constexpr int64_t kMaxFusedHeadDim = 512;

// CPU math of tokens [first, last): T is float or Ort::Float16_t; every position inside the table
// (the operator checks them first).
template <typename T>
void HeadNormRotaryCpu(const HeadNormRotaryShape& shape, const T* q, const T* k, const T* q_scale, const T* k_scale,
                       const int64_t* positions, const T* cos_table, const T* sin_table, T* q_out, T* k_out,
                       int64_t first_token, int64_t last_token);

template <typename T>
void SiluMulCpu(const T* gate, const T* up, T* out, size_t first, size_t last);

// Adds both operators' CPU and CUDA kernels (fp32 and fp16) to `domain`.
void AddFusedOps(Ort::CustomOpDomain& domain);

}  // namespace decide
