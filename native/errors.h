// The engine's one exception type. Everything below the binding throws EngineError (or lets an
// Ort::Exception / std::exception escape); the bindings turn all of them into a JS Error with a
// stable `.code` through CodedCurrentException (the AsyncWorkers in engine_binding.cc as a
// rejected Promise, the MatMul probe as a thrown one; compileOwnKernels, a check, returns the
// message). Nothing here ever aborts the process.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

namespace decide {

// Stable codes seen by JavaScript as err.code.
inline constexpr const char* kErrModelLoad = "ERR_MODEL_LOAD";
inline constexpr const char* kErrInput = "ERR_INPUT";
inline constexpr const char* kErrProviderUnavailable = "ERR_PROVIDER_UNAVAILABLE";
inline constexpr const char* kErrOrtLoad = "ERR_ORT_LOAD";
inline constexpr const char* kErrEngineClosed = "ERR_ENGINE_CLOSED";
inline constexpr const char* kErrOutOfMemory = "ERR_OUT_OF_MEMORY";
inline constexpr const char* kErrRuntime = "ERR_RUNTIME";

class EngineError : public std::runtime_error {
 public:
  EngineError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& Code() const { return code_; }

 private:
  std::string code_;
};

// Whether a provider's failure message says memory ran out (ONNX Runtime's arena: "Failed to
// allocate memory", or "Available memory of N is smaller than requested bytes of M" at its limit;
// CUDA: "out of memory"; the host: bad_alloc). Not every message that names memory: "an illegal
// memory access was encountered" is a fault, not a shortage.
inline bool IsOutOfMemory(const std::string& message) {
  for (const char* sign : {"out of memory", "Failed to allocate", "failed to allocate", "bad_alloc", "smaller than requested bytes"}) {
    if (message.find(sign) != std::string::npos) return true;
  }
  return false;
}

// The exception being handled as (code, message): the one mapping every binding uses. Call inside
// a catch block only.
struct CodedMessage {
  std::string code;
  std::string message;
};
inline CodedMessage CodedCurrentException() {
  try {
    throw;
  } catch (const EngineError& e) {
    return {e.Code(), e.what()};
  } catch (const std::bad_alloc&) {
    return {kErrOutOfMemory, "out of memory"};
  } catch (const std::exception& e) {  // Ort::Exception included
    return {kErrRuntime, e.what()};
  }
}

}  // namespace decide
