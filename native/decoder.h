// One ONNX Runtime session over a decoder-only LLM exported with Optimum naming
// (input_ids, attention_mask, position_ids, past_key_values.{i}.key/value -> logits, present.{i}.*),
// and the single primitive the scorer needs: Extend(), which runs a batch of rows, each row being
// "a past (a prefix of some KvBlock) + new tokens", in ONE forward pass.
//
// Batch layout of one Extend (B rows, P = longest past, S = longest new run):
//   past_key_values.* [B, kvh, P, hd]: row r's past at [0, p_r), zeros at [p_r, P) (masked)
//   input_ids         [B, S]:          row r's new tokens at [0, s_r), padding after (masked)
//   attention_mask    [B, P + S]:      1 on [0, p_r) and [P, P + s_r), 0 elsewhere
//   position_ids      [B, S]:          p_r + i, the row's true positions
// so every real query sees exactly its own past and its own earlier new tokens, whatever else is in
// the batch. Padded KV is zero-filled, never garbage: a NaN there would leak through 0 * NaN.
//
// Packed rows (graphs with a decide_segment_ids input, src/models/builder/decoder-graph.ts): a
// row's new tokens may be several items (questions) one after another, each with its segment id
// (1, 2, ...; the past is segment 0) and positions restarting at p_r. The graph's mask then lets a
// token see the past and its own item only, so one row scores all of a state's questions against
// one copy of the state's KV.
//
// Thread: called from AsyncWorker::Execute on the libuv pool, one call at a time (the Scorer's
// mutex). Ownership: the Decoder owns the session and the Device; ExtendResult owns the present
// tensors (ORT-allocated, on the Device) until the caller has copied what it keeps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "device.h"
#include "kv_block.h"

namespace decide {

// Set by the binding from src/engine/engine-options.ts (the one place for defaults).
struct DecoderOptions {
  std::string model_path;
  std::string provider;      // "cpu" | "cuda"
  int intra_op_threads = 0;  // 0: ORT's default (one per physical core); the engine always sets it
  int device_id = 0;
  // Hints from config.json, used only where the graph leaves a dimension symbolic.
  int num_kv_heads = 0;
  int head_dim = 0;
  int64_t vocab_size = 0;
  // Non-empty: ONNX Runtime's profiler is on for this session and writes
  // "<profile_prefix>_<date>.json" (chrome-trace events per node) when the session is destroyed.
  std::string profile_prefix;
};

struct ModelInfo {
  KvShape kv;
  int64_t vocab_size = 0;
  ONNXTensorElementDataType kv_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  ONNXTensorElementDataType logits_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  ONNXTensorElementDataType ids_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType mask_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType positions_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  ONNXTensorElementDataType segments_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  bool has_position_ids = false;
  // Set when the graph was rewritten (src/engine/lm-head-rewrite.ts) to gather the wanted positions
  // of each row before the LM head (an index [B, K]): logits are then [B, K, vocab] instead of
  // [B, S, vocab].
  bool has_logits_index = false;
  // The graph has decide_segment_ids [B, P + S]: it can run packed rows.
  bool has_segment_ids = false;
  bool has_use_cache_branch = false;  // Optimum "merged" decoders
};

struct ExtendRow {
  const KvBlock* past = nullptr;  // may be null when past_len == 0
  int past_len = 0;               // tokens of `past` to use (<= past->length)
  const int32_t* tokens = nullptr;
  int num_tokens = 0;
  // Packed rows only (both null otherwise): each new token's position relative to past_len (an
  // item's positions restart at 0) and its segment id (0 is the past's, items count from 1).
  const int32_t* offsets = nullptr;
  const int32_t* segments = nullptr;
  // Indices into tokens whose logits are wanted, in the order they are returned.
  std::vector<int32_t> logits_positions;
};

struct ExtendResult {
  int batch = 0;
  int past_len = 0;  // P
  int new_len = 0;   // S
  std::vector<Ort::Value> present_keys;    // per layer, [B, kvh, P + S, hd], on the Device
  std::vector<Ort::Value> present_values;  // per layer
  int logits_per_row = 0;                  // K: the most logits_positions of any row
  std::vector<float> logits;               // [B, K, vocab], fp32; row r's k-th wanted position at r * K + k
};

class Decoder {
 public:
  explicit Decoder(const DecoderOptions& options);
  ~Decoder();

  const ModelInfo& Info() const { return info_; }
  Device* GetDevice() const { return device_.get(); }

  ExtendResult Extend(const std::vector<ExtendRow>& rows, bool want_logits);

  // Copies row `row`'s new-token KV ([P, P + count) of the present tensors) into `dst` at
  // positions [dst_start, dst_start + count).
  void CopyNewKv(const ExtendResult& result, int row, int count, KvBlock& dst, int dst_start);
  // Copies the first `count` positions of `src` into `dst` (same shape, dst->length >= count).
  void CopyKvPrefix(const KvBlock& src, int count, KvBlock& dst);

 private:
  void ReadModelInfo(const DecoderOptions& options);
  // Fills the past_pool_ buffers for this pass: each row's past KV, zeros after it up to past_len.
  void ForkPast(const std::vector<ExtendRow>& rows, int past_len);

  std::unique_ptr<Ort::Session> session_;
  std::unique_ptr<Device> device_;
  Ort::MemoryInfo host_info_{nullptr};
  ModelInfo info_;
  std::vector<std::string> past_key_names_, past_value_names_;
  std::vector<std::string> present_key_names_, present_value_names_;
  // Batch past tensors (2 per layer), grown on demand and reused by every Extend(); bounded by the
  // scorer's past budget. Safe because Extend() calls never overlap (the Scorer's mutex).
  std::vector<DeviceBuffer> past_pool_;
  int fork_threads_ = 1;  // threads that share a large fork on the CPU (the session's intra-op threads)
};

}  // namespace decide
