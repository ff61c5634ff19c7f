// Where the tensors the engine manages live (KV blocks, the pass's batch past, staged inputs), and
// every data movement between or within them. On the CPU provider that is host memory; on the CUDA
// provider device memory from the session's CUDA allocator, moved on one stream that is also the
// session's compute stream (so a copy queued before a run is ordered before it without a wait).
// The CUDA calls of this movement live in cuda_device.cc (the engine's own kernels' NVRTC and
// launches in cuda_module.cc); this addon never links CUDA.
//
// Counting: every call into the provider's copy or fill API counts once in DeviceCounters
// (a batch of copies issued as one call counts once), with the bytes that cross between host and
// device, the same operations on both providers.
//
// Thread: used by one score call at a time (the Scorer's compute lock); Counters() is read under
// that lock. Ownership: a Device is owned by the Decoder and shared (raw pointer) by every
// DeviceBuffer made from it; the Decoder releases its buffers, then the Device, then the session,
// then the stream (decoder.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "../provider.h"

namespace decide {

// One strided copy within device memory: `rows` runs of `width` bytes, the i-th from
// src + i * src_pitch to dst + i * dst_pitch. src == nullptr zero-fills the runs instead.
struct CopyRun {
  char* dst = nullptr;
  size_t dst_pitch = 0;
  const char* src = nullptr;
  size_t src_pitch = 0;
  size_t width = 0;
  size_t rows = 1;
};

// One run executed on the host: memcpy, or memset for a zero run (the CPU device, and the tests'
// counting device).
inline void CopyRunOnHost(const CopyRun& run) {
  for (size_t r = 0; r < run.rows; ++r) {
    char* dst = run.dst + r * run.dst_pitch;
    if (run.src == nullptr) {
      std::memset(dst, 0, run.width);
    } else {
      std::memcpy(dst, run.src + r * run.src_pitch, run.width);
    }
  }
}

struct DeviceCounters {
  uint64_t device_copies = 0;  // calls into the provider's copy or fill API
  uint64_t host_to_device_bytes = 0;
  uint64_t device_to_host_bytes = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual Provider Kind() const = 0;
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  // Host memory the device copies from asynchronously (pinned on CUDA).
  virtual void* AllocHost(size_t bytes) = 0;
  virtual void FreeHost(void* ptr) = 0;

  // Every run of `runs` in as few provider calls as it allows (one on the CPU and with CUDA's
  // batched copy). The runs' destinations must not overlap, and no run may read another's
  // destination: the copies of one batch have no order among them.
  void CopyBatch(const std::vector<CopyRun>& runs);
  // Host to device (one call). With host_src from AllocHost the copy is asynchronous on CUDA:
  // the source must stay unchanged until the next Synchronize() or session run.
  void CopyFromHost(void* dst, const void* host_src, size_t bytes);
  // Device to host (one call); returns when the bytes are there.
  void CopyToHost(void* host_dst, const void* src, size_t bytes);
  // Free device memory now, in bytes; 0 when the device cannot tell (the CPU).
  virtual size_t FreeMemoryBytes() const = 0;
  // How a batch of copies is issued, for EngineInfo: "host", "batched" or "per-run (why)".
  virtual std::string CopyPath() const = 0;
  // Waits until everything queued on the device is done (a no-op on the CPU).
  virtual void Synchronize() = 0;
  // Synchronize() for the release paths (destructors): false where the device has failed (a CUDA
  // error such as an illegal address stays with the context), never a throw, which would end the
  // process from a destructor.
  bool TrySynchronize() noexcept;
  // Bytes that crossed from the device to the host outside these calls (a session run's
  // host-bound outputs), so that the counters see them too.
  void CountDeviceToHost(size_t bytes) { counters_.device_to_host_bytes += bytes; }

  const DeviceCounters& Counters() const { return counters_; }
  virtual const OrtMemoryInfo* MemoryInfo() const = 0;

 protected:
  // Returns how many provider calls it made.
  virtual uint64_t DoCopyBatch(const std::vector<CopyRun>& runs) = 0;
  virtual void DoCopyFromHost(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void DoCopyToHost(void* host_dst, const void* src, size_t bytes) = 0;

 private:
  DeviceCounters counters_;
};

// `threads`: how many threads may share a large batch of host copies.
std::unique_ptr<Device> MakeCpuDevice(int threads);

// The CUDA runtime of one device and the stream every copy and the session's kernels run on.
// Made before the session (its stream goes into the session options) and released after it.
class CudaStream {
 public:
  virtual ~CudaStream() = default;
  virtual void* Handle() const = 0;  // the cudaStream_t
};

// Throws EngineError(ERR_PROVIDER_UNAVAILABLE) when the CUDA runtime cannot be resolved.
std::shared_ptr<CudaStream> MakeCudaStream(int device_id);
// The device over `stream`, allocating from `session`'s CUDA allocator, or with `own_pool` (CUDA
// graphs: cuda_device.cc says why) from CUDA's stream-ordered pool.
std::unique_ptr<Device> MakeCudaDevice(Ort::Session& session, std::shared_ptr<CudaStream> stream, int device_id,
                                       bool own_pool);

// Runs a release (a free) and swallows its failure: memory a failed device cannot take back is
// left to the process's end rather than thrown from a destructor.
template <typename Release>
void ReleaseQuietly(Release release) noexcept {
  try {
    release();
  } catch (...) {
  }
}

// Owning handle to one allocation on a Device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* device, size_t bytes)
      : device_(device), bytes_(bytes), ptr_(bytes > 0 ? device->Alloc(bytes) : nullptr) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    Release();
    device_ = other.device_;
    bytes_ = other.bytes_;
    ptr_ = other.ptr_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
    return *this;
  }
  ~DeviceBuffer() { Release(); }

  char* Data() const { return static_cast<char*>(ptr_); }
  size_t Bytes() const { return bytes_; }

 private:
  void Release() noexcept {
    if (ptr_ != nullptr) ReleaseQuietly([this] { device_->Free(ptr_); });
    ptr_ = nullptr;
  }
  Device* device_ = nullptr;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// Owning handle to host memory the device copies from (pinned on CUDA); grown, never shrunk.
class HostStaging {
 public:
  explicit HostStaging(Device* device) : device_(device) {}
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging() { Release(); }
  char* Reserve(size_t bytes) {
    if (bytes > bytes_) {
      Release();
      ptr_ = device_->AllocHost(bytes);
      bytes_ = bytes;
    }
    return static_cast<char*>(ptr_);
  }

 private:
  void Release() noexcept {
    if (ptr_ != nullptr) ReleaseQuietly([this] { device_->FreeHost(ptr_); });
    ptr_ = nullptr;
    bytes_ = 0;
  }
  Device* device_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace decide
