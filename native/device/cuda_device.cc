// The CUDA provider's Device and stream. Every CUDA call of the addon but the engine's own kernels'
// (device/cuda_module.cc) is here, resolved with dlsym
// from the runtime and driver libraries that the CUDA provider itself needs, so the addon links no
// CUDA and loads on hosts without it.
//
// A batch of copies goes to the driver's batched copy (cuMemcpyBatchAsync, CUDA 12.8 and later:
// one call for every row of every run), queued on the stream without a wait. Where the driver
// lacks it, or DECIDE_CUDA_COPY=loop asks for it, or its self-check at start fails, each run is one
// cudaMemcpy2DAsync / cudaMemset2DAsync on the same stream instead (counted one call each).
// The stream is the session's compute stream (user_compute_stream), so copies and kernels are
// ordered without a host wait; a session run ends with one synchronisation of it.
//
// Memory comes from the session's CUDA allocator (ONNX Runtime's arena), except with CUDA graphs:
// a captured graph keeps the addresses of the intermediate tensors ONNX Runtime gave it, which
// its arena counts as free after the capture; a KV block taken from the arena later could be
// overwritten by the next replay. There the engine's memory comes from CUDA's stream-ordered pool
// instead (cudaMallocAsync on the same stream), apart from ONNX Runtime's.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../errors.h"
#include "device.h"

namespace decide {
namespace {

// cudaMemcpyKind values are part of the stable CUDA runtime ABI.
constexpr int kHostToDevice = 1;
constexpr int kDeviceToHost = 2;
constexpr int kDeviceToDevice = 3;
constexpr unsigned kStreamNonBlocking = 1;

using SetDeviceFn = int (*)(int);
using StreamCreateFn = int (*)(void**, unsigned);
using StreamDestroyFn = int (*)(void*);
using StreamSynchronizeFn = int (*)(void*);
using MemcpyAsyncFn = int (*)(void*, const void*, size_t, int, void*);
using Memcpy2DAsyncFn = int (*)(void*, size_t, const void*, size_t, size_t, size_t, int, void*);
using Memset2DAsyncFn = int (*)(void*, size_t, int, size_t, size_t, void*);
using HostAllocFn = int (*)(void**, size_t, unsigned);
using FreeHostFn = int (*)(void*);
using MemGetInfoFn = int (*)(size_t*, size_t*);
using MallocAsyncFn = int (*)(void**, size_t, void*);
using FreeAsyncFn = int (*)(void*, void*);
using DefaultMemPoolFn = int (*)(void**, int);
using MemPoolSetAttributeFn = int (*)(void*, int, void*);
// cudaMemPoolAttrReleaseThreshold (driver_types.h): bytes the pool keeps instead of returning them.
constexpr int kMemPoolAttrReleaseThreshold = 4;

// The driver's batched copy (cuda.h, CUDA 13: cuMemcpyBatchAsync is cuMemcpyBatchAsync_v2).
struct MemLocation {
  int type;  // CUmemLocationType: 1 = device
  int id;
};
struct MemcpyAttributes {
  int src_access_order;  // CUmemcpySrcAccessOrder: 1 = in stream order
  MemLocation src_loc_hint;
  MemLocation dst_loc_hint;
  unsigned flags;
};
using MemcpyBatchFn = int (*)(uint64_t*, uint64_t*, size_t*, size_t, MemcpyAttributes*, size_t*, size_t, void*);

void* Resolve(void* handle, const char* name) { return handle == nullptr ? nullptr : dlsym(handle, name); }

// The runtime entry points, from the first libcudart found (the CUDA provider's own, once loaded).
struct CudaApi {
  SetDeviceFn set_device = nullptr;
  StreamCreateFn stream_create = nullptr;
  StreamDestroyFn stream_destroy = nullptr;
  StreamSynchronizeFn stream_synchronize = nullptr;
  MemcpyAsyncFn memcpy_async = nullptr;
  Memcpy2DAsyncFn memcpy2d_async = nullptr;
  Memset2DAsyncFn memset2d_async = nullptr;
  HostAllocFn host_alloc = nullptr;
  FreeHostFn free_host = nullptr;
  MemGetInfoFn mem_get_info = nullptr;
  MemcpyBatchFn memcpy_batch = nullptr;  // null: the driver has none
  // The stream-ordered pool (CUDA 11.2 and later), for CUDA graphs only.
  MallocAsyncFn malloc_async = nullptr;
  FreeAsyncFn free_async = nullptr;
  DefaultMemPoolFn default_mem_pool = nullptr;
  MemPoolSetAttributeFn mem_pool_set_attribute = nullptr;

  bool Complete() const {
    return set_device && stream_create && stream_destroy && stream_synchronize && memcpy_async && memcpy2d_async &&
           memset2d_async && host_alloc && free_host && mem_get_info;
  }

  static const CudaApi& Get() {
    static const CudaApi api = Load();
    return api;
  }

 private:
  static CudaApi Load() {
    CudaApi api;
    // Never dlclose'd: buffers and streams of it live until the process ends.
    const char* candidates[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    for (const char* name : candidates) {
      void* h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (h == nullptr) continue;
      api.set_device = reinterpret_cast<SetDeviceFn>(Resolve(h, "cudaSetDevice"));
      api.stream_create = reinterpret_cast<StreamCreateFn>(Resolve(h, "cudaStreamCreateWithFlags"));
      api.stream_destroy = reinterpret_cast<StreamDestroyFn>(Resolve(h, "cudaStreamDestroy"));
      api.stream_synchronize = reinterpret_cast<StreamSynchronizeFn>(Resolve(h, "cudaStreamSynchronize"));
      api.memcpy_async = reinterpret_cast<MemcpyAsyncFn>(Resolve(h, "cudaMemcpyAsync"));
      api.memcpy2d_async = reinterpret_cast<Memcpy2DAsyncFn>(Resolve(h, "cudaMemcpy2DAsync"));
      api.memset2d_async = reinterpret_cast<Memset2DAsyncFn>(Resolve(h, "cudaMemset2DAsync"));
      api.host_alloc = reinterpret_cast<HostAllocFn>(Resolve(h, "cudaHostAlloc"));
      api.free_host = reinterpret_cast<FreeHostFn>(Resolve(h, "cudaFreeHost"));
      api.mem_get_info = reinterpret_cast<MemGetInfoFn>(Resolve(h, "cudaMemGetInfo"));
      api.malloc_async = reinterpret_cast<MallocAsyncFn>(Resolve(h, "cudaMallocAsync"));
      api.free_async = reinterpret_cast<FreeAsyncFn>(Resolve(h, "cudaFreeAsync"));
      api.default_mem_pool = reinterpret_cast<DefaultMemPoolFn>(Resolve(h, "cudaDeviceGetDefaultMemPool"));
      api.mem_pool_set_attribute = reinterpret_cast<MemPoolSetAttributeFn>(Resolve(h, "cudaMemPoolSetAttribute"));
      if (api.Complete()) break;
    }
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    api.memcpy_batch = reinterpret_cast<MemcpyBatchFn>(Resolve(driver, "cuMemcpyBatchAsync_v2"));
    return api;
  }
};

void Check(int status, const char* what) {
  if (status != 0) throw EngineError(kErrRuntime, std::string(what) + " failed with CUDA error " + std::to_string(status));
}

class CudaStreamImpl final : public CudaStream {
 public:
  explicit CudaStreamImpl(int device_id) : api_(CudaApi::Get()) {
    if (!api_.Complete()) {
      throw EngineError(kErrProviderUnavailable,
                        "the CUDA runtime (libcudart) could not be found; install CUDA and the "
                        "ONNX Runtime CUDA provider (see README, 'GPU hosts')");
    }
    Check(api_.set_device(device_id), "cudaSetDevice");
    Check(api_.stream_create(&stream_, kStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~CudaStreamImpl() override {
    if (stream_ != nullptr) {
      api_.stream_synchronize(stream_);
      api_.stream_destroy(stream_);
    }
  }
  void* Handle() const override { return stream_; }

 private:
  const CudaApi& api_;
  void* stream_ = nullptr;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(Ort::Session& session, std::shared_ptr<CudaStream> stream, int device_id, bool own_pool)
      : api_(CudaApi::Get()),
        stream_(std::move(stream)),
        info_("Cuda", OrtDeviceAllocator, device_id, OrtMemTypeDefault),
        allocator_(session, info_),
        device_id_(device_id),
        own_pool_(own_pool) {
    if (own_pool_) {
      if (!api_.malloc_async || !api_.free_async || !api_.default_mem_pool || !api_.mem_pool_set_attribute) {
        throw EngineError(kErrProviderUnavailable, "CUDA graphs need cudaMallocAsync (CUDA 11.2 or later)");
      }
      // Keep freed blocks in the pool rather than give them back at every synchronisation.
      void* pool = nullptr;
      Check(api_.default_mem_pool(&pool, device_id), "cudaDeviceGetDefaultMemPool");
      uint64_t keep = UINT64_MAX;
      Check(api_.mem_pool_set_attribute(pool, kMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    }
    const char* choice = std::getenv("DECIDE_CUDA_COPY");
    if (choice != nullptr && std::string(choice) == "loop") {
      copy_path_ = "per-run (DECIDE_CUDA_COPY=loop)";
    } else if (api_.memcpy_batch == nullptr) {
      copy_path_ = "per-run (the driver has no cuMemcpyBatchAsync_v2)";
    } else if (!SelfCheck()) {
      copy_path_ = "per-run (the driver's batched copy failed its check)";
    } else {
      copy_path_ = "batched";
    }
    batched_ = copy_path_ == "batched";
  }
  ~CudaDevice() override {
    // Nothing queued may still read or write memory that is about to go back to the allocator.
    api_.stream_synchronize(stream_->Handle());
    if (zeros_ != nullptr) ReleaseQuietly([this] { Free(zeros_); });
    if (own_pool_) api_.stream_synchronize(stream_->Handle());
  }
  Provider Kind() const override { return Provider::kCuda; }
  void* Alloc(size_t bytes) override {
    if (!own_pool_) return allocator_.Alloc(bytes);
    void* ptr = nullptr;
    Check(api_.malloc_async(&ptr, bytes, stream_->Handle()), "cudaMallocAsync");
    return ptr;
  }
  void Free(void* ptr) override {
    if (!own_pool_) return allocator_.Free(ptr);
    // Stream-ordered: after every copy and run queued before it.
    api_.free_async(ptr, stream_->Handle());
  }
  void* AllocHost(size_t bytes) override {
    void* ptr = nullptr;
    Check(api_.host_alloc(&ptr, bytes, 0), "cudaHostAlloc");
    return ptr;
  }
  void FreeHost(void* ptr) override {
    // A pending copy may still read it.
    api_.stream_synchronize(stream_->Handle());
    api_.free_host(ptr);
  }
  void Synchronize() override {
    Check(api_.set_device(device_id_), "cudaSetDevice");
    Check(api_.stream_synchronize(stream_->Handle()), "cudaStreamSynchronize");
  }
  size_t FreeMemoryBytes() const override {
    size_t free = 0, total = 0;
    api_.set_device(device_id_);
    return api_.mem_get_info(&free, &total) == 0 ? free : 0;
  }
  std::string CopyPath() const override { return copy_path_; }
  const OrtMemoryInfo* MemoryInfo() const override { return info_; }

 protected:
  uint64_t DoCopyBatch(const std::vector<CopyRun>& runs) override {
    Check(api_.set_device(device_id_), "cudaSetDevice");
    if (!batched_) return CopyEach(runs);
    size_t widest_zero = 0;
    size_t count = 0;
    for (const CopyRun& run : runs) {
      if (run.src == nullptr) widest_zero = std::max(widest_zero, run.width);
      count += run.rows;
    }
    if (count == 0) return 0;
    const char* zeros = Zeros(widest_zero);
    dsts_.clear();
    srcs_.clear();
    sizes_.clear();
    dsts_.reserve(count);
    srcs_.reserve(count);
    sizes_.reserve(count);
    for (const CopyRun& run : runs) {
      for (size_t r = 0; r < run.rows; ++r) {
        dsts_.push_back(reinterpret_cast<uint64_t>(run.dst + r * run.dst_pitch));
        srcs_.push_back(reinterpret_cast<uint64_t>(run.src == nullptr ? zeros : run.src + r * run.src_pitch));
        sizes_.push_back(run.width);
      }
    }
    MemcpyAttributes attributes{1, {1, device_id_}, {1, device_id_}, 0};
    size_t first = 0;
    Check(api_.memcpy_batch(dsts_.data(), srcs_.data(), sizes_.data(), count, &attributes, &first, 1, stream_->Handle()),
          "cuMemcpyBatchAsync");
    return 1;
  }
  void DoCopyFromHost(void* dst, const void* host_src, size_t bytes) override {
    Check(api_.set_device(device_id_), "cudaSetDevice");
    Check(api_.memcpy_async(dst, host_src, bytes, kHostToDevice, stream_->Handle()), "cudaMemcpyAsync(HostToDevice)");
  }
  void DoCopyToHost(void* host_dst, const void* src, size_t bytes) override {
    Check(api_.set_device(device_id_), "cudaSetDevice");
    Check(api_.memcpy_async(host_dst, src, bytes, kDeviceToHost, stream_->Handle()), "cudaMemcpyAsync(DeviceToHost)");
    Check(api_.stream_synchronize(stream_->Handle()), "cudaStreamSynchronize");
  }

 private:
  uint64_t CopyEach(const std::vector<CopyRun>& runs) {
    for (const CopyRun& run : runs) {
      if (run.src == nullptr) {
        Check(api_.memset2d_async(run.dst, run.dst_pitch == 0 ? run.width : run.dst_pitch, 0, run.width, run.rows,
                                  stream_->Handle()),
              "cudaMemset2DAsync");
      } else {
        Check(api_.memcpy2d_async(run.dst, run.dst_pitch == 0 ? run.width : run.dst_pitch, run.src,
                                  run.src_pitch == 0 ? run.width : run.src_pitch, run.width, run.rows, kDeviceToDevice,
                                  stream_->Handle()),
              "cudaMemcpy2DAsync(DeviceToDevice)");
      }
    }
    return runs.size();
  }

  // A zero-filled device buffer of at least `bytes`, the source of a batch's zero runs.
  const char* Zeros(size_t bytes) {
    if (bytes <= zeros_bytes_) return static_cast<const char*>(zeros_);
    if (zeros_ != nullptr) {
      api_.stream_synchronize(stream_->Handle());
      Free(zeros_);
    }
    zeros_ = Alloc(bytes);
    zeros_bytes_ = bytes;
    Check(api_.memset2d_async(zeros_, bytes, 0, bytes, 1, stream_->Handle()), "cudaMemset2DAsync");
    return static_cast<const char*>(zeros_);
  }

  // One batched copy of a known pattern, read back: a driver whose batched copy errs or copies
  // wrong bytes is not used.
  bool SelfCheck() {
    const size_t n = 256;
    std::vector<unsigned char> pattern(2 * n), back(2 * n, 0);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
    char* src = static_cast<char*>(Alloc(2 * n));
    char* dst = static_cast<char*>(Alloc(4 * n));
    bool ok = false;
    try {
      Check(api_.set_device(device_id_), "cudaSetDevice");
      Check(api_.memcpy_async(src, pattern.data(), 2 * n, kHostToDevice, stream_->Handle()), "cudaMemcpyAsync");
      Check(api_.memset2d_async(dst, 4 * n, 0xff, 4 * n, 1, stream_->Handle()), "cudaMemset2DAsync");
      // Rows of 16 bytes swapped between two runs, one of them strided, and a zero run.
      std::vector<CopyRun> runs = {{dst, 32, src, 16, 16, n / 16}, {dst + 16, 32, src + n, 16, 16, n / 16},
                                   {dst + 2 * n, 0, nullptr, 0, n, 1}};
      batched_ = true;
      DoCopyBatch(runs);
      std::vector<unsigned char> out(4 * n, 1);
      Check(api_.memcpy_async(out.data(), dst, 4 * n, kDeviceToHost, stream_->Handle()), "cudaMemcpyAsync");
      Check(api_.stream_synchronize(stream_->Handle()), "cudaStreamSynchronize");
      ok = true;
      for (size_t r = 0; r < n / 16 && ok; ++r) {
        ok = std::memcmp(out.data() + r * 32, pattern.data() + r * 16, 16) == 0 &&
             std::memcmp(out.data() + r * 32 + 16, pattern.data() + n + r * 16, 16) == 0;
      }
      for (size_t i = 2 * n; i < 3 * n && ok; ++i) ok = out[i] == 0;
    } catch (const EngineError&) {
      ok = false;
      api_.stream_synchronize(stream_->Handle());
    }
    Free(src);
    Free(dst);
    return ok;
  }

  const CudaApi& api_;
  std::shared_ptr<CudaStream> stream_;
  Ort::MemoryInfo info_;
  Ort::Allocator allocator_;
  int device_id_;
  bool own_pool_;  // CUDA graphs: memory from cudaMallocAsync, not ONNX Runtime's arena
  bool batched_ = false;
  std::string copy_path_;
  void* zeros_ = nullptr;
  size_t zeros_bytes_ = 0;
  std::vector<uint64_t> dsts_, srcs_;
  std::vector<size_t> sizes_;
};

}  // namespace

std::shared_ptr<CudaStream> MakeCudaStream(int device_id) { return std::make_shared<CudaStreamImpl>(device_id); }

std::unique_ptr<Device> MakeCudaDevice(Ort::Session& session, std::shared_ptr<CudaStream> stream, int device_id,
                                       bool own_pool) {
  return std::make_unique<CudaDevice>(session, std::move(stream), device_id, own_pool);
}

}  // namespace decide
