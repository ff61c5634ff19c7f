#include "session_options.h"

#include <memory>
#include <string>

#include "errors.h"
#include "ops/op_domain.h"
#include "ort_runtime.h"

namespace decide {

std::unique_ptr<Ort::Session> OpenSession(SessionSettings settings, const std::string& model_path,
                                          std::shared_ptr<CudaStream>* stream, const std::string& profile_prefix) {
  LowerOrtLogSeverity(settings.log_severity);
  if (settings.provider == Provider::kCuda) {
    *stream = MakeCudaStream(settings.device_id);
    settings.cuda_stream = (*stream)->Handle();
  }
  Ort::SessionOptions session_options = MakeSessionOptions(settings);
  if (!profile_prefix.empty()) session_options.EnableProfiling(profile_prefix.c_str());
  try {
    return std::make_unique<Ort::Session>(OrtEnvironment(), model_path.c_str(), session_options);
  } catch (const Ort::Exception& e) {
    throw EngineError(kErrModelLoad, model_path + ": " + e.what());
  }
}

Ort::SessionOptions MakeSessionOptions(const SessionSettings& settings) {
  Ort::SessionOptions session_options;
  session_options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  session_options.SetInterOpNumThreads(1);
  session_options.SetLogSeverityLevel(settings.log_severity);
  if (settings.intra_op_threads > 0) session_options.SetIntraOpNumThreads(settings.intra_op_threads);
  // The engine's own operators (ops/op_domain.h), CPU and CUDA kernels: a graph that uses none is not affected.
  session_options.Add(DecideOpDomain());
  if (settings.provider != Provider::kCuda) return session_options;

  try {
    OrtCUDAProviderOptionsV2* cuda_options = nullptr;
    Ort::ThrowOnError(Ort::GetApi().CreateCUDAProviderOptions(&cuda_options));
    std::unique_ptr<OrtCUDAProviderOptionsV2, decltype(Ort::GetApi().ReleaseCUDAProviderOptions)>
        holder(cuda_options, Ort::GetApi().ReleaseCUDAProviderOptions);
    const std::string device_text = std::to_string(settings.device_id);
    // TF32 off: the provider's default runs fp32 MatMuls in TF32 (10-bit mantissa), which put
    // fp32 logits 8e-3 away from the CPU's. An fp32 graph must answer like the fp32 CPU engine;
    // fp16/bf16 graphs are not affected.
    const char* keys[] = {"device_id", "use_tf32", "enable_cuda_graph"};
    const char* values[] = {device_text.c_str(), "0", settings.cuda_graphs ? "1" : "0"};
    Ort::ThrowOnError(Ort::GetApi().UpdateCUDAProviderOptions(cuda_options, keys, values, 3));
    if (settings.cuda_stream != nullptr) {
      // The engine's copies run on this stream too, so they are ordered with the kernels.
      Ort::ThrowOnError(
          Ort::GetApi().UpdateCUDAProviderOptionsWithValue(cuda_options, "user_compute_stream", settings.cuda_stream));
    }
    session_options.AppendExecutionProvider_CUDA_V2(*cuda_options);
  } catch (const Ort::Exception& e) {
    throw EngineError(kErrProviderUnavailable,
                      std::string("the CUDA execution provider cannot be loaded: ") + e.what() +
                          ". Run `npx decide setup-cuda` (it checks the host and names what is "
                          "missing), or point DECIDE_ORT_LIBRARY at a CUDA-enabled ONNX Runtime with "
                          "libonnxruntime_providers_cuda.so beside it; see README 'GPU hosts'");
  }
  return session_options;
}

}  // namespace decide
