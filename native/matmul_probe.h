// The benchmark's peak probe, device-resident: times one MatMul graph (input A, a weight
// initializer, output Y) with A copied to the session's device once and bound there, and Y bound to
// device memory, so a timed run is the GEMM and one synchronisation of its outputs. Not through
// onnxruntime-node's JS API, which copies the input to the device and the output back on every
// run: on a GPU that times the copies, a small fraction of the card's GEMM throughput
// (docs/benchmark.md). On the CPU both are the same GEMM.
// Synchronous: the benchmark calls it between its timed runs, on the main thread.
#pragma once

#include <string>
#include <vector>

#include "provider.h"

namespace decide {

// The probe's defaults live here only: the binding (matmul_probe_binding.h) overrides the fields
// whose keys the caller gives.
struct MatMulProbeOptions {
  std::string model_path;
  Provider provider = Provider::kCpu;
  int intra_op_threads = 0;
  int device_id = 0;
  int warmup_runs = 2;
  int min_runs = 3;
  double min_seconds = 0.3;
  int max_runs = 200;
  // ONNX Runtime's log severity for the probe's session: 3, errors only.
  int log_severity = 3;
};

// Seconds per timed run (at least min_runs and min_seconds of them, at most max_runs). Throws
// EngineError (ERR_MODEL_LOAD for a graph that is not one float [M, K] input A and output Y).
std::vector<double> TimeMatMul(const MatMulProbeOptions& options);

}  // namespace decide
