#include "fused_ops.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "../device/cuda_module.h"

namespace decide {
namespace {

float ToFloat(float x) { return x; }
float ToFloat(Ort::Float16_t x) { return x.ToFloat(); }
template <typename T>
T FromFloat(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return Ort::Float16_t(x);
  }
}

template <typename T>
constexpr ONNXTensorElementDataType ElementType() {
  return std::is_same_v<T, float> ? ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

[[noreturn]] void Refuse(const std::string& message) { throw Ort::Exception(message.c_str(), ORT_INVALID_ARGUMENT); }

std::vector<int64_t> ShapeOf(const Ort::ConstValue& value) { return value.GetTensorTypeAndShapeInfo().GetShape(); }

std::string Text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// HeadNormRotary's attributes, read once per kernel.
struct HeadNormRotaryAttributes {
  float epsilon;
  bool normalize;
};

HeadNormRotaryAttributes ReadAttributes(const OrtKernelInfo* info) {
  Ort::ConstKernelInfo kernel_info(info);
  const float epsilon = kernel_info.GetAttribute<float>("epsilon");
  int64_t normalize = 1;
  try {
    normalize = kernel_info.GetAttribute<int64_t>("normalize");
  } catch (const Ort::Exception&) {
    // Absent: the default, 1.
  }
  if (normalize != 0 && normalize != 1) Refuse("HeadNormRotary: normalize must be 0 or 1, got " + std::to_string(normalize));
  return {epsilon, normalize == 1};
}

// Checks HeadNormRotary's inputs against each other and returns the shape of the work.
HeadNormRotaryShape ReadHeadNormRotary(Ort::KernelContext& context, const HeadNormRotaryAttributes& attributes) {
  const std::vector<int64_t> q = ShapeOf(context.GetInput(0));
  const std::vector<int64_t> k = ShapeOf(context.GetInput(1));
  const std::vector<int64_t> q_scale = ShapeOf(context.GetInput(2));
  const std::vector<int64_t> k_scale = ShapeOf(context.GetInput(3));
  const std::vector<int64_t> positions = ShapeOf(context.GetInput(4));
  const std::vector<int64_t> cos = ShapeOf(context.GetInput(5));
  const std::vector<int64_t> sin = ShapeOf(context.GetInput(6));
  const std::string name = "HeadNormRotary: ";
  if (q.size() != 3 || k.size() != 3 || q[0] != k[0] || q[1] != k[1]) {
    Refuse(name + "q and k must be [batch, sequence, heads * head_dim] of one batch and sequence, got " + Text(q) + " and " + Text(k));
  }
  if (cos.size() != 2 || cos != sin) Refuse(name + "cos_cache and sin_cache must be [positions, head_dim / 2] alike, got " + Text(cos) + " and " + Text(sin));
  if (cos[0] <= 0) Refuse(name + "cos_cache and sin_cache have no rows (no position to rotate by)");
  const int64_t head_dim = cos[1] * 2;
  if (head_dim <= 0 || head_dim > kMaxFusedHeadDim) Refuse(name + "head_dim " + std::to_string(head_dim) + " is outside 2.." + std::to_string(kMaxFusedHeadDim));
  if (q[2] % head_dim != 0 || k[2] % head_dim != 0) {
    Refuse(name + "q's and k's last axes (" + std::to_string(q[2]) + ", " + std::to_string(k[2]) + ") must be multiples of head_dim " + std::to_string(head_dim));
  }
  if (q_scale != std::vector<int64_t>{head_dim} || k_scale != std::vector<int64_t>{head_dim}) {
    Refuse(name + "q_scale and k_scale must be [" + std::to_string(head_dim) + "], got " + Text(q_scale) + " and " + Text(k_scale));
  }
  if (positions != std::vector<int64_t>{q[0], q[1]}) Refuse(name + "position_ids must be " + Text({q[0], q[1]}) + ", got " + Text(positions));
  HeadNormRotaryShape shape;
  shape.tokens = q[0] * q[1];
  shape.q_heads = q[2] / head_dim;
  shape.k_heads = k[2] / head_dim;
  shape.head_dim = head_dim;
  shape.table_rows = cos[0];
  shape.epsilon = attributes.epsilon;
  shape.normalize = attributes.normalize;
  return shape;
}

// A HeadNormRotary run's checked shape and its outputs (q's and k's shapes).
struct HeadNormRotaryRun {
  HeadNormRotaryShape shape;
  Ort::UnownedValue q_out;
  Ort::UnownedValue k_out;
};

HeadNormRotaryRun StartHeadNormRotary(Ort::KernelContext& context, const HeadNormRotaryAttributes& attributes) {
  const HeadNormRotaryShape shape = ReadHeadNormRotary(context, attributes);
  return {shape, context.GetOutput(0, ShapeOf(context.GetInput(0))), context.GetOutput(1, ShapeOf(context.GetInput(1)))};
}

// A SiluMul run's output (gate's shape, checked against up's) and its element count.
struct SiluMulRun {
  Ort::UnownedValue out;
  size_t count;
};

SiluMulRun StartSiluMul(Ort::KernelContext& context) {
  const std::vector<int64_t> gate = ShapeOf(context.GetInput(0));
  const std::vector<int64_t> up = ShapeOf(context.GetInput(1));
  if (gate != up) Refuse("SiluMul: gate and up must have one shape, got " + Text(gate) + " and " + Text(up));
  size_t count = 1;
  for (int64_t d : gate) count *= static_cast<size_t>(d);
  return {context.GetOutput(0, gate), count};
}

// ---- CPU kernels ----

// Runs `tasks` tasks of `job`: inline when there is one (handing it out costs more than it runs),
// else cut among the session's intra-op threads.
template <typename Job>
void RunTasks(Ort::KernelContext& context, void (*task)(void*, size_t), size_t tasks, Job* job) {
  if (tasks == 1) {
    task(job, 0);
  } else {
    context.ParallelFor(task, tasks, 0, job);
  }
}

template <typename T>
struct HeadNormRotaryJob {
  HeadNormRotaryShape shape;
  const T* in[2];
  const T* scale[2];
  const int64_t* positions;
  const T* cos;
  const T* sin;
  T* out[2];
  int64_t tokens_per_task;
};

template <typename T>
void RunHeadNormRotaryTask(void* data, size_t task) {
  const auto& job = *static_cast<const HeadNormRotaryJob<T>*>(data);
  const int64_t first = static_cast<int64_t>(task) * job.tokens_per_task;
  const int64_t last = std::min(job.shape.tokens, first + job.tokens_per_task);
  HeadNormRotaryCpu<T>(job.shape, job.in[0], job.in[1], job.scale[0], job.scale[1], job.positions, job.cos, job.sin, job.out[0],
                       job.out[1], first, last);
}

template <typename T>
struct HeadNormRotaryCpuKernel {
  HeadNormRotaryAttributes attributes;
  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    auto [shape, q_out, k_out] = StartHeadNormRotary(context, attributes);
    if (shape.tokens == 0) return;
    // Checked here, before the work is cut among threads (a task must not throw).
    const int64_t* positions = context.GetInput(4).GetTensorData<int64_t>();
    for (int64_t t = 0; t < shape.tokens; t++) {
      if (positions[t] < 0 || positions[t] >= shape.table_rows) {
        Refuse("HeadNormRotary: position_ids value " + std::to_string(positions[t]) + " is out of range [0, " + std::to_string(shape.table_rows) + ")");
      }
    }
    HeadNormRotaryJob<T> job{shape,
                             {context.GetInput(0).GetTensorData<T>(), context.GetInput(1).GetTensorData<T>()},
                             {context.GetInput(2).GetTensorData<T>(), context.GetInput(3).GetTensorData<T>()},
                             positions,
                             context.GetInput(5).GetTensorData<T>(),
                             context.GetInput(6).GetTensorData<T>(),
                             {q_out.GetTensorMutableData<T>(), k_out.GetTensorMutableData<T>()},
                             0};
    // Tasks of ~16k values each: smaller ones cost more to hand out than to run.
    const int64_t per_token = (shape.q_heads + shape.k_heads) * shape.head_dim;
    job.tokens_per_task = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, per_token));
    RunTasks(context, RunHeadNormRotaryTask<T>, static_cast<size_t>((shape.tokens + job.tokens_per_task - 1) / job.tokens_per_task), &job);
  }
};

template <typename T>
struct SiluMulJob {
  const T* gate;
  const T* up;
  T* out;
  size_t count;
  size_t per_task;
};

template <typename T>
void RunSiluMulTask(void* data, size_t task) {
  const auto& job = *static_cast<const SiluMulJob<T>*>(data);
  const size_t first = task * job.per_task;
  SiluMulCpu<T>(job.gate, job.up, job.out, first, std::min(job.count, first + job.per_task));
}

template <typename T>
struct SiluMulCpuKernel {
  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    auto [out, count] = StartSiluMul(context);
    if (count == 0) return;
    SiluMulJob<T> job{context.GetInput(0).GetTensorData<T>(), context.GetInput(1).GetTensorData<T>(), out.GetTensorMutableData<T>(),
                      count, 16384};
    RunTasks(context, RunSiluMulTask<T>, (count + job.per_task - 1) / job.per_task, &job);
  }
};

// ---- CUDA kernels (device_kernels.cu) ----

constexpr unsigned kHeadNormRotaryThreads = 128;  // 4 warps per token's block
constexpr unsigned kElementwiseThreads = 256;

// The module of the session's CUDA context is made as the kernel is (session creation) where that
// thread has the context current, so that a missing NVRTC or a compile error stops the session's
// creation with its message; else at the first run. What these throw reaches ONNX Runtime as a
// status (Guarded, below).
void PrepareModule() { CudaKernelModule::ForCurrentContext(); }

const CudaKernelModule& ModuleForRun() {
  const CudaKernelModule* module = CudaKernelModule::ForCurrentContext();
  if (module == nullptr) throw Ort::Exception("the engine's CUDA kernel runs on a thread with no current CUDA context", ORT_FAIL);
  return *module;
}

void Launch(const CudaKernelModule& module, const char* kernel, unsigned grid, unsigned block, void** args, void* stream) {
  // The session's stream is non-blocking: a launch on the legacy default stream instead would not
  // be ordered with the kernels before and after it.
  if (stream == nullptr) throw Ort::Exception("the CUDA provider gave the engine's kernel no compute stream", ORT_FAIL);
  module.Launch(kernel, grid, block, args, stream);
}

template <typename T>
struct HeadNormRotaryCudaKernel {
  HeadNormRotaryAttributes attributes;
  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    auto [shape, q_out, k_out] = StartHeadNormRotary(context, attributes);
    if (shape.tokens == 0) return;
    if (shape.tokens > 0x7fffffff) Refuse("HeadNormRotary: more than 2^31 - 1 tokens in one run");
    const void* q = context.GetInput(0).GetTensorRawData();
    const void* k = context.GetInput(1).GetTensorRawData();
    const void* q_scale = context.GetInput(2).GetTensorRawData();
    const void* k_scale = context.GetInput(3).GetTensorRawData();
    const void* positions = context.GetInput(4).GetTensorRawData();
    const void* cos = context.GetInput(5).GetTensorRawData();
    const void* sin = context.GetInput(6).GetTensorRawData();
    void* q_result = q_out.GetTensorMutableRawData();
    void* k_result = k_out.GetTensorMutableRawData();
    int q_heads = static_cast<int>(shape.q_heads);
    int k_heads = static_cast<int>(shape.k_heads);
    int head_dim = static_cast<int>(shape.head_dim);
    float eps = shape.epsilon;
    long long table_rows = shape.table_rows;
    int normalize = shape.normalize ? 1 : 0;
    void* args[] = {&q, &k, &q_scale, &k_scale, &positions, &cos, &sin, &q_result, &k_result, &q_heads, &k_heads, &head_dim, &eps, &table_rows, &normalize};
    const char* kernel = std::is_same_v<T, float> ? "head_norm_rotary_f32" : "head_norm_rotary_f16";
    Launch(ModuleForRun(), kernel, static_cast<unsigned>(shape.tokens), kHeadNormRotaryThreads, args, context.GetGPUComputeStream());
  }
};

template <typename T>
struct SiluMulCudaKernel {
  void Compute(OrtKernelContext* raw) {
    Ort::KernelContext context(raw);
    auto [out, count] = StartSiluMul(context);
    if (count == 0) return;
    const void* gate = context.GetInput(0).GetTensorRawData();
    const void* up = context.GetInput(1).GetTensorRawData();
    void* result = out.GetTensorMutableRawData();
    const CudaKernelModule& module = ModuleForRun();
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    const bool by_eight = !std::is_same_v<T, float> && count % 8 == 0 && aligned(gate) && aligned(up) && aligned(result);
    long long work = static_cast<long long>(by_eight ? count / 8 : count);
    // A grid-stride loop: enough blocks to fill every multiprocessor several times over, no more.
    const long long wanted = (work + kElementwiseThreads - 1) / kElementwiseThreads;
    const unsigned grid = static_cast<unsigned>(std::min<long long>(wanted, static_cast<long long>(module.Multiprocessors()) * 16));
    void* args[] = {&gate, &up, &result, &work};
    const char* kernel = by_eight ? "silu_mul_f16x8" : (std::is_same_v<T, float> ? "silu_mul_f32" : "silu_mul_f16");
    Launch(module, kernel, grid, kElementwiseThreads, args, context.GetGPUComputeStream());
  }
};

// ---- the operators ----

// Runs `fn`, turning what it throws into the OrtStatus ONNX Runtime takes (the V2 custom-op entry
// points), so that no exception crosses into ONNX Runtime's C interface.
template <typename Fn>
OrtStatusPtr Guarded(Fn&& fn) {
  try {
    fn();
    return nullptr;
  } catch (const Ort::Exception& e) {
    return Ort::GetApi().CreateStatus(e.GetOrtErrorCode(), e.what());
  } catch (const std::exception& e) {
    return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
  }
}

// A kernel's Compute behind the status-returning entry point.
template <typename Kernel>
struct StatusKernel : Kernel {
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    return Guarded([&] { this->Compute(context); });
  }
};

constexpr const char* kCudaProvider = "CUDAExecutionProvider";

template <typename T, bool kCuda>
using HeadNormRotaryKernel = StatusKernel<std::conditional_t<kCuda, HeadNormRotaryCudaKernel<T>, HeadNormRotaryCpuKernel<T>>>;

template <typename T, bool kCuda>
struct HeadNormRotaryOp : Ort::CustomOpBase<HeadNormRotaryOp<T, kCuda>, HeadNormRotaryKernel<T, kCuda>, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    return Guarded([&] {
      auto made = new HeadNormRotaryKernel<T, kCuda>();
      made->attributes = ReadAttributes(info);
      if constexpr (kCuda) {
        try {
          PrepareModule();
        } catch (...) {
          delete made;
          throw;
        }
      }
      *kernel = made;
    });
  }
  const char* GetName() const { return "HeadNormRotary"; }
  const char* GetExecutionProviderType() const { return kCuda ? kCudaProvider : nullptr; }
  size_t GetInputTypeCount() const { return 7; }
  ONNXTensorElementDataType GetInputType(size_t index) const { return index == 4 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 : ElementType<T>(); }
  size_t GetOutputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ElementType<T>(); }
};

template <typename T, bool kCuda>
using SiluMulKernel = StatusKernel<std::conditional_t<kCuda, SiluMulCudaKernel<T>, SiluMulCpuKernel<T>>>;

template <typename T, bool kCuda>
struct SiluMulOp : Ort::CustomOpBase<SiluMulOp<T, kCuda>, SiluMulKernel<T, kCuda>, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo*, void** kernel) const {
    return Guarded([&] {
      if constexpr (kCuda) PrepareModule();
      *kernel = new SiluMulKernel<T, kCuda>();
    });
  }
  const char* GetName() const { return "SiluMul"; }
  const char* GetExecutionProviderType() const { return kCuda ? kCudaProvider : nullptr; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ElementType<T>(); }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ElementType<T>(); }
};

}  // namespace

template <typename T>
void HeadNormRotaryCpu(const HeadNormRotaryShape& shape, const T* q, const T* k, const T* q_scale, const T* k_scale,
                       const int64_t* positions, const T* cos_table, const T* sin_table, T* q_out, T* k_out,
                       int64_t first_token, int64_t last_token) {
  const int64_t half = shape.head_dim / 2;
  std::vector<float> row(static_cast<size_t>(shape.head_dim));
  for (int64_t token = first_token; token < last_token; token++) {
    const int64_t position = positions[token];
    const T* cos_row = cos_table + position * half;
    const T* sin_row = sin_table + position * half;
    for (int part = 0; part < 2; part++) {
      const int64_t heads = part == 0 ? shape.q_heads : shape.k_heads;
      const T* scale = part == 0 ? q_scale : k_scale;
      for (int64_t head = 0; head < heads; head++) {
        const int64_t offset = (token * heads + head) * shape.head_dim;
        const T* x = (part == 0 ? q : k) + offset;
        T* y = (part == 0 ? q_out : k_out) + offset;
        float squares = 0.0f;
        for (int64_t i = 0; i < shape.head_dim; i++) {
          row[i] = ToFloat(x[i]);
          squares += row[i] * row[i];
        }
        const float inv_rms = shape.normalize ? 1.0f / std::sqrt(squares / static_cast<float>(shape.head_dim) + shape.epsilon) : 1.0f;
        for (int64_t i = 0; i < half; i++) {
          const float a = row[i] * inv_rms * ToFloat(scale[i]);
          const float b = row[i + half] * inv_rms * ToFloat(scale[i + half]);
          const float c = ToFloat(cos_row[i]);
          const float s = ToFloat(sin_row[i]);
          y[i] = FromFloat<T>(a * c - b * s);
          y[i + half] = FromFloat<T>(b * c + a * s);
        }
      }
    }
  }
}

template <typename T>
void SiluMulCpu(const T* gate, const T* up, T* out, size_t first, size_t last) {
  for (size_t i = first; i < last; i++) {
    const float g = ToFloat(gate[i]);
    out[i] = FromFloat<T>(g / (1.0f + std::exp(-g)) * ToFloat(up[i]));
  }
}

template void HeadNormRotaryCpu<float>(const HeadNormRotaryShape&, const float*, const float*, const float*, const float*, const int64_t*,
                                       const float*, const float*, float*, float*, int64_t, int64_t);
template void HeadNormRotaryCpu<Ort::Float16_t>(const HeadNormRotaryShape&, const Ort::Float16_t*, const Ort::Float16_t*,
                                                const Ort::Float16_t*, const Ort::Float16_t*, const int64_t*, const Ort::Float16_t*,
                                                const Ort::Float16_t*, Ort::Float16_t*, Ort::Float16_t*, int64_t, int64_t);
template void SiluMulCpu<float>(const float*, const float*, float*, size_t, size_t);
template void SiluMulCpu<Ort::Float16_t>(const Ort::Float16_t*, const Ort::Float16_t*, Ort::Float16_t*, size_t, size_t);

void AddFusedOps(Ort::CustomOpDomain& domain) {
  // Leaked on purpose, as the domain: sessions keep pointers to the ops.
  domain.Add(new HeadNormRotaryOp<float, false>());
  domain.Add(new HeadNormRotaryOp<Ort::Float16_t, false>());
  domain.Add(new HeadNormRotaryOp<float, true>());
  domain.Add(new HeadNormRotaryOp<Ort::Float16_t, true>());
  domain.Add(new SiluMulOp<float, false>());
  domain.Add(new SiluMulOp<Ort::Float16_t, false>());
  domain.Add(new SiluMulOp<float, true>());
  domain.Add(new SiluMulOp<Ort::Float16_t, true>());
}

}  // namespace decide
