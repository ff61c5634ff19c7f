#include "matmul_probe.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include <onnxruntime_cxx_api.h>

#include "device/device.h"
#include "errors.h"
#include "ort_runtime.h"
#include "session_options.h"

namespace decide {
namespace {

// Half-precision bits of a float of moderate magnitude (the probe's inputs are in [-0.1, 0.1]).
uint16_t FloatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000;
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return static_cast<uint16_t>(sign);  // too small for a normal half: zero
  return static_cast<uint16_t>(sign | (exponent << 10) | ((bits >> 13) & 0x3ff));
}

}  // namespace

std::vector<double> TimeMatMul(const MatMulProbeOptions& options) {
  SessionSettings settings;
  settings.provider = options.provider;
  settings.intra_op_threads = options.intra_op_threads;
  settings.device_id = options.device_id;
  settings.log_severity = options.log_severity;
  // Declared before the session: the stream outlives it.
  std::shared_ptr<CudaStream> stream;
  std::unique_ptr<Ort::Session> session = OpenSession(settings, options.model_path, &stream);
  if (session->GetInputCount() != 1 || session->GetOutputCount() != 1) {
    throw EngineError(kErrModelLoad, options.model_path + ": the probe needs one input A and one output Y");
  }
  // The shape info is a view into the type info, which must outlive it.
  Ort::TypeInfo input_type = session->GetInputTypeInfo(0);
  auto input_info = input_type.GetTensorTypeAndShapeInfo();
  const ONNXTensorElementDataType type = input_info.GetElementType();
  const std::vector<int64_t> dims = input_info.GetShape();
  if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0 ||
      (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16)) {
    throw EngineError(kErrModelLoad, options.model_path + ": the probe's input must be a float32 or float16 [M, K]");
  }
  const size_t count = static_cast<size_t>(dims[0]) * static_cast<size_t>(dims[1]);
  const size_t elem = type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? 4 : 2;

  // Deterministic values in [-0.08, 0.08], in the graph's float type.
  std::vector<char> host(count * elem);
  for (size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.01f;
    if (elem == 4) {
      std::memcpy(host.data() + i * 4, &v, 4);
    } else {
      const uint16_t h = FloatToHalf(v);
      std::memcpy(host.data() + i * 2, &h, 2);
    }
  }

  std::unique_ptr<Device> device = settings.provider == Provider::kCuda
                                       ? MakeCudaDevice(*session, stream, options.device_id, false)
                                       : MakeCpuDevice(options.intra_op_threads);
  std::vector<double> seconds;
  {
    // The input's memory comes from the session's allocator: released before the session.
    DeviceBuffer input(device.get(), host.size());
    device->CopyFromHost(input.Data(), host.data(), host.size());
    device->Synchronize();
    Ort::Value a = Ort::Value::CreateTensor(device->MemoryInfo(), input.Data(), host.size(), dims.data(), dims.size(), type);
    Ort::AllocatorWithDefaultOptions allocator;
    const std::string input_name = session->GetInputNameAllocated(0, allocator).get();
    const std::string output_name = session->GetOutputNameAllocated(0, allocator).get();
    Ort::IoBinding binding(*session);
    binding.BindInput(input_name.c_str(), a);
    binding.BindOutput(output_name.c_str(), device->MemoryInfo());

    auto run = [&] {
      try {
        session->Run(Ort::RunOptions{nullptr}, binding);
        binding.SynchronizeOutputs();
      } catch (const Ort::Exception& e) {
        throw EngineError(kErrRuntime, std::string("the MatMul probe failed: ") + e.what());
      }
    };
    for (int w = 0; w < options.warmup_runs; ++w) run();
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    while (static_cast<int>(seconds.size()) < options.max_runs) {
      const auto t = Clock::now();
      run();
      seconds.push_back(std::chrono::duration<double>(Clock::now() - t).count());
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (static_cast<int>(seconds.size()) >= options.min_runs && elapsed >= options.min_seconds) break;
    }
  }
  return seconds;
}

}  // namespace decide
