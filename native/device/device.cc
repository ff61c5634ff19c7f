#include "device.h"

#include <algorithm>

namespace decide {

namespace {

// A run whose rows lie back to back on both sides is one block.
bool Contiguous(const CopyRun& run) {
  return run.rows > 1 && run.dst_pitch == run.width && (run.src == nullptr || run.src_pitch == run.width);
}

}  // namespace

void Device::CopyBatch(const std::vector<CopyRun>& runs) {
  if (runs.empty()) return;
  if (std::none_of(runs.begin(), runs.end(), Contiguous)) {
    counters_.device_copies += DoCopyBatch(runs);
    return;
  }
  // Each such run goes down as one row: CUDA's batched copy takes one entry per row, and the driver
  // works through them one by one on the host (a cached state as long as the pass's past forks a
  // layer's keys in one piece instead of one per head).
  std::vector<CopyRun> merged(runs);
  for (CopyRun& run : merged) {
    if (!Contiguous(run)) continue;
    run.width *= run.rows;
    run.dst_pitch = run.src_pitch = 0;
    run.rows = 1;
  }
  counters_.device_copies += DoCopyBatch(merged);
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
