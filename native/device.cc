#include "device.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "errors.h"

namespace decide {
namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice() : info_(Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault)) {}
  void* Alloc(size_t bytes) override {
    // 64-byte alignment matches what ORT's own CPU allocator hands out.
    void* ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void Free(void* ptr) override { std::free(ptr); }
  void Copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows) override {
    for (size_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, width);
    }
  }
  void Zero(void* dst, size_t bytes) override { std::memset(dst, 0, bytes); }
  void CopyToHost(void* host_dst, const void* src, size_t bytes) override {
    std::memcpy(host_dst, src, bytes);
  }
  void CopyFromHost(void* dst, const void* host_src, size_t bytes) override { std::memcpy(dst, host_src, bytes); }
  const OrtMemoryInfo* MemoryInfo() const override { return info_; }
  bool IsHost() const override { return true; }

 private:
  Ort::MemoryInfo info_;
};

// The handful of CUDA runtime entry points the KV cache needs. cudaMemcpyKind values are part of
// the stable CUDA runtime ABI: 1 = HostToDevice, 2 = DeviceToHost, 3 = DeviceToDevice.
using CudaMemcpyFn = int (*)(void*, const void*, size_t, int);
using CudaMemcpy2DFn = int (*)(void*, size_t, const void*, size_t, size_t, size_t, int);
using CudaMemsetFn = int (*)(void*, int, size_t);
using CudaSetDeviceFn = int (*)(int);

class CudaDevice final : public Device {
 public:
  CudaDevice(Ort::Session& session, int device_id)
      : info_("Cuda", OrtDeviceAllocator, device_id, OrtMemTypeDefault),
        allocator_(session, info_),
        device_id_(device_id) {
    // The CUDA provider has already loaded libcudart into the process; find it there first.
    const char* candidates[] = {nullptr, "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                "libcudart.so"};
    for (const char* name : candidates) {
      void* handle = name == nullptr ? dlopen(nullptr, RTLD_NOW) : dlopen(name, RTLD_NOW);
      if (handle == nullptr) continue;
      memcpy_ = reinterpret_cast<CudaMemcpyFn>(dlsym(handle, "cudaMemcpy"));
      memcpy2d_ = reinterpret_cast<CudaMemcpy2DFn>(dlsym(handle, "cudaMemcpy2D"));
      memset_ = reinterpret_cast<CudaMemsetFn>(dlsym(handle, "cudaMemset"));
      set_device_ = reinterpret_cast<CudaSetDeviceFn>(dlsym(handle, "cudaSetDevice"));
      if (memcpy_ != nullptr && memcpy2d_ != nullptr && memset_ != nullptr && set_device_ != nullptr) break;
    }
    if (memcpy_ == nullptr || memcpy2d_ == nullptr || memset_ == nullptr || set_device_ == nullptr) {
      throw EngineError(kErrProviderUnavailable,
                        "the CUDA runtime (libcudart) could not be found; install CUDA and the "
                        "ONNX Runtime CUDA provider (see README, 'GPU hosts')");
    }
  }
  void* Alloc(size_t bytes) override { return allocator_.Alloc(bytes); }
  void Free(void* ptr) override { allocator_.Free(ptr); }
  void Copy(void* dst, const void* src, size_t bytes) override {
    Check(set_device_(device_id_), "cudaSetDevice");
    Check(memcpy_(dst, src, bytes, 3), "cudaMemcpy(DeviceToDevice)");
  }
  void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows) override {
    Check(set_device_(device_id_), "cudaSetDevice");
    Check(memcpy2d_(dst, dst_pitch, src, src_pitch, width, rows, 3), "cudaMemcpy2D(DeviceToDevice)");
  }
  void Zero(void* dst, size_t bytes) override {
    Check(set_device_(device_id_), "cudaSetDevice");
    Check(memset_(dst, 0, bytes), "cudaMemset");
  }
  void CopyToHost(void* host_dst, const void* src, size_t bytes) override {
    Check(set_device_(device_id_), "cudaSetDevice");
    Check(memcpy_(host_dst, src, bytes, 2), "cudaMemcpy(DeviceToHost)");
  }
  void CopyFromHost(void* dst, const void* host_src, size_t bytes) override {
    Check(set_device_(device_id_), "cudaSetDevice");
    Check(memcpy_(dst, host_src, bytes, 1), "cudaMemcpy(HostToDevice)");
  }
  const OrtMemoryInfo* MemoryInfo() const override { return info_; }
  bool IsHost() const override { return false; }

 private:
  static void Check(int status, const char* what) {
    if (status != 0) throw EngineError(kErrRuntime, std::string(what) + " failed with CUDA error " +
                                                        std::to_string(status));
  }
  Ort::MemoryInfo info_;
  Ort::Allocator allocator_;
  int device_id_;
  CudaMemcpyFn memcpy_ = nullptr;
  CudaMemcpy2DFn memcpy2d_ = nullptr;
  CudaMemsetFn memset_ = nullptr;
  CudaSetDeviceFn set_device_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice() { return std::make_unique<CpuDevice>(); }

std::unique_ptr<Device> MakeCudaDevice(Ort::Session& session, int device_id) {
  return std::make_unique<CudaDevice>(session, device_id);
}

}  // namespace decide
