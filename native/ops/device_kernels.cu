// The engine's own CUDA kernels, compiled at run time by NVRTC (native/device/cuda_module.cc) for
// the card the session runs on. Two fusions that ONNX Runtime has no op for, each one pass over
// memory where ONNX Runtime's ops take two or three (native/ops/fused_ops.h says what they compute):
//   head_norm_rotary_*  the per-head RMSNorm of q and k (Qwen3's; or none), then rotary, both in one launch
//   silu_mul_*          SiLU(gate) * up
//
// This file is plain C++ over a small prelude (dk_* names) so that it compiles two ways: as CUDA
// with the prelude in cuda_module.cc, and as C++ with the emulating prelude of the C++ tests
// (native/test/device_kernels_emulated.h), which runs every CUDA thread of a launch as a host thread
// and checks these kernels against the CPU implementations. No #include: NVRTC is given no include
// path.
//
// The prelude provides: DK_KERNEL (an entry point), DK_DEVICE (a helper), dk_half (fp16 bits),
// dk_i64, dk_to_float / dk_store (fp32 math on fp32 or fp16 storage), dk_load8_half /
// dk_store8_half (eight fp16 values through one 16-byte access), dk_warp_sum (the sum over the 32
// lanes of a warp, every lane calling it), dk_rsqrt, dk_exp, and dk_block / dk_thread /
// dk_block_threads / dk_grid_blocks (blockIdx.x, threadIdx.x, blockDim.x, gridDim.x).

// Values of a row kept in registers per lane: head_dim / 2 <= 32 * DK_MAX_PAIRS_PER_LANE, so
// head_dim <= 512 (the graph builder writes the op only then).
#define DK_MAX_PAIRS_PER_LANE 8

// One block per token; warp w of the block takes heads w, w + warps, ... of q and then of k. A
// head's row of head_dim values: lane l holds the rotary pairs (p, p + head_dim / 2) for
// p = l, l + 32, ...; with `normalize` the row's mean square is summed over the warp (the same for
// every warp of the launch, so every lane reaches the sum); each pair is normed, scaled by its
// weights and rotated by the token's angle, and written once.
template <typename T>
DK_DEVICE void head_norm_rotary(const T* q, const T* k, const T* q_scale, const T* k_scale, const dk_i64* positions,
                                const T* cos_table, const T* sin_table, T* q_out, T* k_out, int q_heads, int k_heads,
                                int head_dim, float epsilon, dk_i64 table_rows, int normalize) {
  const dk_i64 token = dk_block();
  const int lane = dk_thread() & 31;
  const int warp = dk_thread() >> 5;
  const int warps = dk_block_threads() >> 5;
  const int half = head_dim / 2;
  dk_i64 position = positions[token];
  // The CPU kernel refuses a position past the table (as ONNX Runtime's RotaryEmbedding does); a
  // CUDA kernel cannot, so it clamps and never reads outside the table. The engine never sends
  // one: prompts are bounded below it.
  if (table_rows <= 0) return;  // refused on the host (ReadHeadNormRotary); never read before the table
  if (position < 0) position = 0;
  if (position >= table_rows) position = table_rows - 1;
  const T* cos_row = cos_table + position * half;
  const T* sin_row = sin_table + position * half;
  for (int head = warp; head < q_heads + k_heads; head += warps) {
    const bool is_q = head < q_heads;
    const dk_i64 row = is_q ? token * q_heads + head : token * k_heads + (head - q_heads);
    const T* x = (is_q ? q : k) + row * head_dim;
    T* y = (is_q ? q_out : k_out) + row * head_dim;
    const T* scale = is_q ? q_scale : k_scale;
    float low[DK_MAX_PAIRS_PER_LANE];
    float high[DK_MAX_PAIRS_PER_LANE];
    float squares = 0.0f;
    for (int j = 0; j < DK_MAX_PAIRS_PER_LANE; j++) {
      const int p = lane + 32 * j;
      low[j] = 0.0f;
      high[j] = 0.0f;
      if (p < half) {
        low[j] = dk_to_float(x[p]);
        high[j] = dk_to_float(x[p + half]);
        squares += low[j] * low[j] + high[j] * high[j];
      }
    }
    const float inv_rms = normalize ? dk_rsqrt(dk_warp_sum(squares) / head_dim + epsilon) : 1.0f;
    for (int j = 0; j < DK_MAX_PAIRS_PER_LANE; j++) {
      const int p = lane + 32 * j;
      if (p >= half) break;
      const float a = low[j] * inv_rms * dk_to_float(scale[p]);
      const float b = high[j] * inv_rms * dk_to_float(scale[p + half]);
      const float c = dk_to_float(cos_row[p]);
      const float s = dk_to_float(sin_row[p]);
      dk_store(y + p, a * c - b * s);
      dk_store(y + p + half, b * c + a * s);
    }
  }
}

DK_KERNEL void head_norm_rotary_f32(const float* q, const float* k, const float* q_scale, const float* k_scale,
                                    const dk_i64* positions, const float* cos_table, const float* sin_table, float* q_out,
                                    float* k_out, int q_heads, int k_heads, int head_dim, float epsilon,
                                    dk_i64 table_rows, int normalize) {
  head_norm_rotary<float>(q, k, q_scale, k_scale, positions, cos_table, sin_table, q_out, k_out, q_heads, k_heads,
                          head_dim, epsilon, table_rows, normalize);
}

DK_KERNEL void head_norm_rotary_f16(const dk_half* q, const dk_half* k, const dk_half* q_scale, const dk_half* k_scale,
                                    const dk_i64* positions, const dk_half* cos_table, const dk_half* sin_table,
                                    dk_half* q_out, dk_half* k_out, int q_heads, int k_heads, int head_dim,
                                    float epsilon, dk_i64 table_rows, int normalize) {
  head_norm_rotary<dk_half>(q, k, q_scale, k_scale, positions, cos_table, sin_table, q_out, k_out, q_heads, k_heads,
                            head_dim, epsilon, table_rows, normalize);
}

DK_DEVICE float dk_silu_times(float gate, float up) { return gate / (1.0f + dk_exp(-gate)) * up; }

// out[i] = SiLU(gate[i]) * up[i], a grid-stride loop over the elements.
template <typename T>
DK_DEVICE void silu_mul(const T* gate, const T* up, T* out, dk_i64 count) {
  const dk_i64 stride = (dk_i64)dk_grid_blocks() * dk_block_threads();
  for (dk_i64 i = (dk_i64)dk_block() * dk_block_threads() + dk_thread(); i < count; i += stride) {
    dk_store(out + i, dk_silu_times(dk_to_float(gate[i]), dk_to_float(up[i])));
  }
}

DK_KERNEL void silu_mul_f32(const float* gate, const float* up, float* out, dk_i64 count) {
  silu_mul<float>(gate, up, out, count);
}

DK_KERNEL void silu_mul_f16(const dk_half* gate, const dk_half* up, dk_half* out, dk_i64 count) {
  silu_mul<dk_half>(gate, up, out, count);
}

// fp16 in groups of eight (one 16-byte load of each input, one store): every pointer 16-byte
// aligned and the count a multiple of 8, which the launcher checks.
DK_KERNEL void silu_mul_f16x8(const dk_half* gate, const dk_half* up, dk_half* out, dk_i64 groups) {
  const dk_i64 stride = (dk_i64)dk_grid_blocks() * dk_block_threads();
  for (dk_i64 g = (dk_i64)dk_block() * dk_block_threads() + dk_thread(); g < groups; g += stride) {
    float a[8];
    float b[8];
    dk_load8_half(gate + g * 8, a);
    dk_load8_half(up + g * 8, b);
    for (int e = 0; e < 8; e++) a[e] = dk_silu_times(a[e], b[e]);
    dk_store8_half(out + g * 8, a);
  }
}
