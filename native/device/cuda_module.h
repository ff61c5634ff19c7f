// The engine's own CUDA kernels (native/ops/device_kernels.cu) as a loaded module: compiled by NVRTC
// for the card of the current CUDA context the first time a session needs them, then launched
// through the driver API on the session's stream. Like cuda_device.cc, everything is resolved with
// dlsym (libnvrtc, libcuda): the addon links no CUDA and loads on hosts without it.
//
// NVRTC is looked for as DECIDE_NVRTC_LIBRARY names it, else beside the libcudart the CUDA provider
// loaded (its own toolkit), else libnvrtc.so.13 / .so.12 / .so on the loader's path; one newer than
// the driver's CUDA major is passed over (the driver would refuse its code). Failing that, or
// failing to compile or load, the op that asked throws, naming what is missing, and its session is
// not made. Modules are cached per context by the context's unique id (cuCtxGetId).
//
// Threads: ForCurrentContext is called by session creation and by runs, on any thread, under one
// lock; a module, once made, is read-only and never unloaded (sessions may outlive static
// destruction), so Launch needs no lock. It owns no buffer: the kernels read and write the
// session's tensors.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace decide {

// The kernels' source (device_kernels.cu) with the CUDA prelude before it: what NVRTC compiles.
std::string DeviceKernelSource();

// Compiles DeviceKernelSource() with NVRTC for `arch` ("sm_90", "compute_75", ...) and returns the
// size of the binary it made; throws EngineError with NVRTC's log where it fails. Needs libnvrtc
// only, no card: `decide setup-cuda --check` and the C++ tests use it.
size_t CompileDeviceKernels(const std::string& arch);

// Where NVRTC is looked for, in order: `named` alone when set (DECIDE_NVRTC_LIBRARY), else the
// folder of the loaded libcudart (empty: none) first, then the loader's search path.
std::vector<std::string> NvrtcCandidates(const std::string& named, const std::string& cudart_folder);

// Whether code from an NVRTC of `nvrtc_major` loads on a driver of CUDA `driver_major` (0: no driver
// here, so nothing to check against).
bool NvrtcFitsDriver(int nvrtc_major, int driver_major);

// The module of the current CUDA context, made once per context: launches a kernel of it by name.
class CudaKernelModule {
 public:
  // Null when the calling thread has no current CUDA context; throws EngineError when the module
  // cannot be made (no driver, no NVRTC, a compile or load error).
  static CudaKernelModule* ForCurrentContext();
  // grid x block threads; args as cuLaunchKernel takes them (pointers to each argument).
  void Launch(const char* kernel, unsigned grid, unsigned block, void** args, void* stream) const;
  // The multiprocessors of the context's device (sizes grid-stride launches).
  int Multiprocessors() const { return multiprocessors_; }

 private:
  CudaKernelModule(std::map<std::string, void*> functions, int multiprocessors)
      : functions_(std::move(functions)), multiprocessors_(multiprocessors) {}
  std::map<std::string, void*> functions_;  // kernel name -> CUfunction; read-only once made
  int multiprocessors_;
};

}  // namespace decide
