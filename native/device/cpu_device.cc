// The CPU provider's Device: host memory, copies with memcpy. A large batch (the fork of a pass's
// past is ~0.5 GB on the document workload) is split over the session's threads, which are idle
// while it runs: memory-bound work that one thread left the other cores idle for.
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "device.h"

namespace decide {
namespace {

// Below this many bytes a batch is copied on the calling thread (a thread start costs more).
constexpr size_t kParallelCopyBytes = size_t{8} << 20;

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int threads)
      : threads_(threads < 1 ? 1 : threads), info_(Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault)) {}
  Provider Kind() const override { return Provider::kCpu; }
  void* Alloc(size_t bytes) override {
    // 64-byte alignment matches what ORT's own CPU allocator hands out.
    void* ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void Free(void* ptr) override { std::free(ptr); }
  void* AllocHost(size_t bytes) override { return Alloc(bytes); }
  void FreeHost(void* ptr) override { Free(ptr); }
  void Synchronize() override {}
  size_t FreeMemoryBytes() const override { return 0; }
  std::string CopyPath() const override { return "host"; }
  const OrtMemoryInfo* MemoryInfo() const override { return info_; }

 protected:
  uint64_t DoCopyBatch(const std::vector<CopyRun>& runs) override {
    size_t total = 0;
    for (const CopyRun& run : runs) total += run.width * run.rows;
    const int workers = total >= kParallelCopyBytes ? std::min<int>(threads_, static_cast<int>(runs.size())) : 1;
    if (workers <= 1) {
      for (const CopyRun& run : runs) CopyRunOnHost(run);
      return 1;
    }
    std::vector<std::thread> helpers;
    for (int w = 1; w < workers; ++w) {
      helpers.emplace_back([&, w] {
        for (size_t i = w; i < runs.size(); i += workers) CopyRunOnHost(runs[i]);
      });
    }
    for (size_t i = 0; i < runs.size(); i += workers) CopyRunOnHost(runs[i]);
    for (std::thread& t : helpers) t.join();
    return 1;
  }
  void DoCopyFromHost(void* dst, const void* host_src, size_t bytes) override { std::memcpy(dst, host_src, bytes); }
  void DoCopyToHost(void* host_dst, const void* src, size_t bytes) override { std::memcpy(host_dst, src, bytes); }

 private:
  int threads_;
  Ort::MemoryInfo info_;
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice(int threads) { return std::make_unique<CpuDevice>(threads); }

}  // namespace decide
