// Where KV tensors live. On the CPU provider that is host memory (malloc/memcpy); on the CUDA
// provider it is device memory taken from the session's CUDA allocator, copied with the CUDA runtime
// that the CUDA provider itself loads (resolved with dlsym, so this addon never links CUDA).
// A Device is owned by the Decoder and shared (raw pointer) by every KvBlock/DeviceBuffer made from
// it; the Decoder outlives them because the prefix cache is cleared before the session is released.
#pragma once

#include <cstddef>
#include <memory>

#include <onnxruntime_cxx_api.h>

namespace decide {

class Device {
 public:
  virtual ~Device() = default;
  virtual void* Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  // Copy within this device's memory.
  virtual void Copy(void* dst, const void* src, size_t bytes) = 0;
  // `rows` copies of `width` bytes, strided by the pitches (one call per head run on the GPU
  // instead of one per head: the KV layouts are [heads, tokens, head_dim] on both sides).
  virtual void Copy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t rows) = 0;
  virtual void Zero(void* dst, size_t bytes) = 0;
  // Device memory to host memory (a no-op copy on the CPU).
  virtual void CopyToHost(void* host_dst, const void* src, size_t bytes) = 0;
  // Host memory to device memory.
  virtual void CopyFromHost(void* dst, const void* host_src, size_t bytes) = 0;
  virtual const OrtMemoryInfo* MemoryInfo() const = 0;
  virtual bool IsHost() const = 0;
};

std::unique_ptr<Device> MakeCpuDevice();

// Throws EngineError(ERR_PROVIDER_UNAVAILABLE) when the CUDA runtime cannot be resolved.
std::unique_ptr<Device> MakeCudaDevice(Ort::Session& session, int device_id);

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
  void Release() {
    if (ptr_ != nullptr) device_->Free(ptr_);
    ptr_ = nullptr;
  }
  Device* device_ = nullptr;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

}  // namespace decide
