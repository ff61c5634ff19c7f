#include "device.h"

namespace decide {

void Device::CopyBatch(const std::vector<CopyRun>& runs) {
  if (runs.empty()) return;
  counters_.device_copies += DoCopyBatch(runs);
}

void Device::CopyFromHost(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  DoCopyFromHost(dst, host_src, bytes);
  counters_.device_copies += 1;
  counters_.host_to_device_bytes += bytes;
}

void Device::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DoCopyToHost(host_dst, src, bytes);
  counters_.device_copies += 1;
  counters_.device_to_host_bytes += bytes;
}

bool Device::TrySynchronize() noexcept {
  try {
    Synchronize();
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace decide
