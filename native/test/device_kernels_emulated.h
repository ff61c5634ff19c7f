// The engine's CUDA kernels (native/ops/device_kernels.cu) compiled as C++ for the C++ tests: a
// prelude that emulates what they use of CUDA, and a launch that runs every thread of every block
// as a host thread (blocks one after another), so that the kernels' indexing, their warp reductions
// (every lane of a warp must reach dk_warp_sum, or the emulation deadlocks as the card would hang)
// and their fp16 rounding are checked on a machine without a GPU. What it cannot check is the card
// itself: timing, the driver, NVRTC (test/gpu/ does, on a card).
#pragma once

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <onnxruntime_cxx_api.h>

namespace dk_emulated {

// The 32 lanes of one warp meeting at dk_warp_sum: each adds its value, all wait, all read the sum.
class Warp {
 public:
  float Sum(int lane, float value) {
    values_[lane] = value;
    Meet();
    float sum = 0.0f;
    for (float v : values_) sum += v;
    Meet();
    return sum;
  }

 private:
  void Meet() {
    std::unique_lock<std::mutex> hold(lock_);
    const int generation = generation_;
    if (++arrived_ == 32) {
      arrived_ = 0;
      generation_++;
      wake_.notify_all();
    } else {
      wake_.wait(hold, [&] { return generation_ != generation; });
    }
  }
  std::mutex lock_;
  std::condition_variable wake_;
  int arrived_ = 0;
  int generation_ = 0;
  float values_[32] = {};
};

struct ThreadState {
  int block = 0;
  int thread = 0;
  int block_threads = 0;
  int grid_blocks = 0;
  Warp* warp = nullptr;
};
inline thread_local ThreadState current;

// Runs `kernel` as a launch of `grid` blocks of `block` threads (a multiple of 32).
inline void Launch(int grid, int block, const std::function<void()>& kernel) {
  for (int b = 0; b < grid; b++) {
    std::vector<Warp> warps(static_cast<size_t>((block + 31) / 32));
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(block));
    for (int t = 0; t < block; t++) {
      threads.emplace_back([&, b, t] {
        current = ThreadState{b, t, block, grid, &warps[static_cast<size_t>(t / 32)]};
        kernel();
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
}

}  // namespace dk_emulated

// The prelude device_kernels.cu expects (its header lists it), for the host.
#define DK_KERNEL static inline
#define DK_DEVICE static inline
typedef long long dk_i64;
struct dk_half {
  unsigned short bits;
};
static inline float dk_to_float(float x) { return x; }
static inline float dk_to_float(dk_half x) { return Ort::Float16_t::FromBits(x.bits).ToFloat(); }
static inline void dk_store(float* p, float v) { *p = v; }
static inline void dk_store(dk_half* p, float v) { p->bits = Ort::Float16_t(v).val; }
static inline void dk_load8_half(const dk_half* p, float* out) {
  for (int i = 0; i < 8; i++) out[i] = dk_to_float(p[i]);
}
static inline void dk_store8_half(dk_half* p, const float* in) {
  for (int i = 0; i < 8; i++) dk_store(p + i, in[i]);
}
static inline float dk_warp_sum(float v) { return dk_emulated::current.warp->Sum(dk_emulated::current.thread & 31, v); }
static inline float dk_rsqrt(float x) { return 1.0f / std::sqrt(x); }
static inline float dk_exp(float x) { return std::exp(x); }
static inline int dk_block() { return dk_emulated::current.block; }
static inline int dk_thread() { return dk_emulated::current.thread; }
static inline int dk_block_threads() { return dk_emulated::current.block_threads; }
static inline int dk_grid_blocks() { return dk_emulated::current.grid_blocks; }

#include "../ops/device_kernels.cu"
