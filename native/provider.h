// The execution provider, parsed once from the load options' string into this enum; everything
// below the binding switches on the enum, never on the string.
#pragma once

#include <string>

#include "errors.h"

namespace decide {

enum class Provider { kCpu, kCuda };

// Throws EngineError(ERR_INPUT) for anything but "cpu" or "cuda".
inline Provider ParseProvider(const std::string& name) {
  if (name == "cpu") return Provider::kCpu;
  if (name == "cuda") return Provider::kCuda;
  throw EngineError(kErrInput, "unknown provider '" + name + "' (use cpu or cuda)");
}

inline const char* ProviderName(Provider provider) { return provider == Provider::kCuda ? "cuda" : "cpu"; }

}  // namespace decide
