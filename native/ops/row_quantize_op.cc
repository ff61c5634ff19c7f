#include "row_quantize_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace decide {
namespace {

// 1/127 and 1e-30 as the builder's fp32 constants hold them.
constexpr float kInv127 = static_cast<float>(1.0 / 127.0);
constexpr float kMinScale = 1e-30f;
// Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer, half to
// even (the default rounding mode), as ONNX's Round does; |x / scale| <= 127 here.
constexpr float kRoundMagic = 12582912.0f;

struct Job {
  const float* x;
  std::uint8_t* q;
  float* scale;
  std::size_t k;
  std::size_t rows;
  std::size_t rows_per_task;
};

void RunTask(void* data, std::size_t task) {
  const Job& job = *static_cast<const Job*>(data);
  const std::size_t first = task * job.rows_per_task;
  const std::size_t last = std::min(job.rows, first + job.rows_per_task);
  for (std::size_t r = first; r < last; r++) job.scale[r] = QuantizeRow(job.x + r * job.k, job.k, job.q + r * job.k);
}

struct RowQuantizeKernel {
  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    Ort::ConstValue input = context.GetInput(0);
    const std::vector<int64_t> shape = input.GetTensorTypeAndShapeInfo().GetShape();
    if (shape.empty()) throw Ort::Exception("RowQuantize: x must have at least one axis", ORT_INVALID_ARGUMENT);
    std::vector<int64_t> scale_shape = shape;
    scale_shape.back() = 1;
    Ort::UnownedValue q = context.GetOutput(0, shape);
    Ort::UnownedValue scale = context.GetOutput(1, scale_shape);
    const std::size_t k = static_cast<std::size_t>(shape.back());
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); i++) rows *= static_cast<std::size_t>(shape[i]);
    if (rows == 0 || k == 0) {
      if (k == 0) std::fill_n(scale.GetTensorMutableData<float>(), rows, kMinScale);
      return;
    }
    // Tasks of at least ~32 KiB of input each: smaller ones cost more to hand out than to run.
    const std::size_t rows_per_task = std::max<std::size_t>(1, 8192 / k);
    Job job{input.GetTensorData<float>(), q.GetTensorMutableData<std::uint8_t>(), scale.GetTensorMutableData<float>(),
            k, rows, rows_per_task};
    const std::size_t tasks = (rows + rows_per_task - 1) / rows_per_task;
    if (tasks == 1) {
      RunTask(&job, 0);
      return;
    }
    context.ParallelFor(RunTask, tasks, 0, &job);
  }
};

struct RowQuantizeOp : Ort::CustomOpBase<RowQuantizeOp, RowQuantizeKernel> {
  void* CreateKernel(const OrtApi&, const OrtKernelInfo*) const { return new RowQuantizeKernel(); }
  const char* GetName() const { return "RowQuantize"; }
  std::size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(std::size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  std::size_t GetOutputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetOutputType(std::size_t index) const {
    return index == 0 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  }
};

}  // namespace

namespace {

float ScaleOf(float abs_max) { return std::max(abs_max * kInv127, kMinScale); }

std::uint8_t QuantizeOne(float x, float scale) {
  // A true division, as the standard graph's Div: a reciprocal multiply can round differently.
  const float v = x / scale;
  return static_cast<std::uint8_t>(static_cast<int>((v + kRoundMagic) - kRoundMagic) + 128);
}

// Any x86-64 (or other) CPU: loops the compiler can vectorize for its baseline instruction set.
float QuantizeRowPortable(const float* x, std::size_t k, std::uint8_t* q) {
  float lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= k; i += 8) {
    for (int l = 0; l < 8; l++) {
      const float a = std::fabs(x[i + l]);
      lanes[l] = a > lanes[l] ? a : lanes[l];
    }
  }
  float abs_max = 0.0f;
  for (float l : lanes) abs_max = std::max(abs_max, l);
  for (; i < k; i++) abs_max = std::max(abs_max, std::fabs(x[i]));
  const float scale = ScaleOf(abs_max);
  for (std::size_t j = 0; j < k; j++) q[j] = QuantizeOne(x[j], scale);
  return scale;
}

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start intrinsics from deliberately undefined registers, which its own
// -Wuninitialized then reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// CPUs with AVX-512 (every x86 CPU with AVX-512 VNNI or AMX, where the u8 x s8 path runs).
// vcvtps2dq rounds with the default rounding mode, to nearest even, as ONNX's Round.
__attribute__((target("avx512f"))) float QuantizeRowAvx512(const float* x, std::size_t k, std::uint8_t* q) {
  __m512 lanes = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 16 <= k; i += 16) lanes = _mm512_max_ps(lanes, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  float abs_max = _mm512_reduce_max_ps(lanes);
  for (; i < k; i++) abs_max = std::max(abs_max, std::fabs(x[i]));
  const float scale = ScaleOf(abs_max);
  const __m512 scales = _mm512_set1_ps(scale);
  const __m512i zero_point = _mm512_set1_epi32(128);
  std::size_t j = 0;
  for (; j + 16 <= k; j += 16) {
    const __m512i rounded = _mm512_cvtps_epi32(_mm512_div_ps(_mm512_loadu_ps(x + j), scales));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtepi32_epi8(_mm512_add_epi32(rounded, zero_point)));
  }
  for (; j < k; j++) q[j] = QuantizeOne(x[j], scale);
  return scale;
}
#pragma GCC diagnostic pop
#endif

using RowFn = float (*)(const float*, std::size_t, std::uint8_t*);

RowFn PickRowFn() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return QuantizeRowAvx512;
#endif
  return QuantizeRowPortable;
}

}  // namespace

float QuantizeRow(const float* x, std::size_t k, std::uint8_t* q) {
  static const RowFn fn = PickRowFn();
  return fn(x, k, q);
}

float QuantizeRowWithoutSimd(const float* x, std::size_t k, std::uint8_t* q) { return QuantizeRowPortable(x, k, q); }

void AddRowQuantizeOp(Ort::CustomOpDomain& domain) {
  // Leaked on purpose, as the domain: sessions keep pointers to the op.
  domain.Add(new RowQuantizeOp());
}

}  // namespace decide
