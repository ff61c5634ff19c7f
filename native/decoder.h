// One ONNX Runtime session over a decoder-only LLM exported with Optimum naming
// (input_ids, attention_mask, position_ids, past_key_values.{i}.key/value -> logits, present.{i}.*),
// and the single primitive the scorer needs: Extend(), which runs a batch of rows, each row being
// "a past (a prefix of some KvBlock) + new tokens", in ONE forward pass.
// Around it: the graph's I/O contract, read and checked at load into ModelInfo, in
// graph_contract.h; a pass's integer inputs, built in the layout below, in pass_inputs.h. Here: the
// pass itself (past, bindings, fixed buffers, CUDA graph ids, the run, its outputs).
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
// Scoring head (graphs rewritten by src/engine/lm-head-rewrite.ts): the graph gathers the wanted
// positions before the LM head (decide_token_index [B, K], flat over the pass's tokens) and returns
// only what the scorer reads, in fp32: the wanted labels' logits (decide_label_index [N], flat
// (row * K + k) * vocab + token -> decide_label_logits [N]) and each wanted position's log-sum-exp
// over the whole vocabulary (decide_position_token_index [M], the flat index of one of its labels:
// that label's logit minus its log-softmax -> decide_log_sum_exp [M]).
// Flat indices keep the graph's gathers plain Gathers, which a CUDA graph can replay. The
// vocabulary never leaves the device.
// A stock graph returns `logits` for every position instead, reduced here on the host.
//
// Inputs: every integer input of a pass is written into one staging buffer (pinned on CUDA;
// pass_inputs.h) and sent with one copy; the tensors are bound where the session runs, so ONNX
// Runtime copies none.
//
// Split passes (graphs with decide_state_span, DecoderFeatures.causalStates): in a pass without a
// past whose rows all give their `lead`, each row's state tokens sit at [0, lead) and its items
// from Ls = the longest lead on (padding between), and decide_state_span has length Ls; the graph
// then runs the state part through a causal kernel. Otherwise decide_state_span is empty and the
// layout is the one above. A row's state KV is at [0, lead) of the present either way.
//
// Shape buckets (DecoderOptions::shape_buckets): every pass is padded to a fixed shape
// (shape_buckets.h: padding rows of one token, longer P and S, repeated wanted positions, dummy
// label and position entries), and its inputs, past, present and scoring-head outputs live in
// buffers reused at the same addresses pass after pass, so that a CUDA graph captured for a shape
// can be replayed (cuda_graphs). The present tensors are then overwritten by the next pass: a
// state's KV is copied out of them, never kept as a view (ExtendResult.present has no owner).
//
// Thread: called from AsyncWorker::Execute on the libuv pool, one call at a time (the Scorer's
// mutex). Ownership and release order (~Decoder): the KV store's buffers and the staging, then the
// Device (its allocator is the session's), then the session, then the CUDA stream the session ran
// on. ExtendResult shares the present tensors (ORT-allocated, on the Device) with the KvBlock
// views made of them; they are released with the last of those.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "device/device.h"
#include "graph_contract.h"
#include "kv/kv_store.h"
#include "provider.h"
#include "shape_buckets.h"

namespace decide {

// Set by the binding from src/engine/engine-options.ts (the one place for defaults).
struct DecoderOptions {
  std::string model_path;
  Provider provider = Provider::kCpu;
  int intra_op_threads = 0;  // 0: ORT's default (one per physical core); the engine always sets it
  int device_id = 0;
  // Hints from config.json, used only where the graph leaves a dimension symbolic.
  int num_kv_heads = 0;
  int head_dim = 0;
  int64_t vocab_size = 0;
  // Non-empty: ONNX Runtime's profiler is on for this session and writes
  // "<profile_prefix>_<date>.json" (chrome-trace events per node) when the session is destroyed.
  std::string profile_prefix;
  // ONNX Runtime's log severity for the session (session_options.h).
  int log_severity = 0;
  // Pad every pass to a fixed shape and run it on fixed buffers (the note above).
  bool shape_buckets = false;
  // CUDA only, with shape_buckets and the scoring head: each shape's run is captured as a CUDA graph
  // once (ONNX Runtime's enable_cuda_graph, one gpu_graph_id per shape) and replayed after.
  bool cuda_graphs = false;
  // Every pass's past + new length rounded up to a multiple of this (shape_buckets.h, AlignPassLength).
  int length_multiple = 1;
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
  // Tokens [0, lead) are the row's state tokens, the rest its packed items (0: not told). On a
  // graph with decide_state_span, a pass without a past whose rows all say so runs split: states
  // through a causal kernel, items after them (the layout note above).
  int lead = 0;
  // Indices into tokens whose logits are wanted, in the order they are returned, and for each the
  // label token ids whose logits are read there.
  std::vector<int32_t> logits_positions;
  struct Labels {
    const int32_t* ids = nullptr;
    int count = 0;
  };
  std::vector<Labels> labels;
};

// The split rule for a pass without a past (the layout note above), fed its rows one by one: the
// pass splits when every row gives its lead and some row has items after it, and then runs its
// longest lead plus its longest items. ExactPassShape (pass_inputs.h) and the pass planner both use it.
struct SplitSpan {
  int lead = 0;   // longest lead
  int items = 0;  // longest items after a lead
  bool all_lead = true;

  void Add(const ExtendRow& row) {
    all_lead = all_lead && row.lead > 0 && row.lead <= row.num_tokens;
    lead = std::max(lead, row.lead);
    items = std::max(items, row.num_tokens - row.lead);
  }
  bool Splits() const { return all_lead && items > 0; }
  int NewLen() const { return lead + items; }
};

struct ExtendResult {
  int batch = 0;
  // Rows x new tokens the pass ran, padding included (padding rows, padded lengths, a split's gap).
  int64_t computed_tokens = 0;
  // The present tensors (per layer, keys then values, [B, kvh, P + S, hd], on the Device), shared
  // so that KvBlock views of them outlive the result; `present` points into them.
  PresentKv present;
  // The wanted positions of all rows, row by row in logits_positions order: wanted_begin[r] is
  // row r's first; per wanted position its labels' logits at label_begin[w] .. label_begin[w + 1]
  // of label_logits, and its log-sum-exp over the vocabulary.
  std::vector<int> wanted_begin;  // B + 1
  std::vector<size_t> label_begin;
  std::vector<float> label_logits;
  std::vector<float> log_sum_exp;
};

class Decoder {
 public:
  explicit Decoder(const DecoderOptions& options);
  ~Decoder();

  const ModelInfo& Info() const { return info_; }
  Device* GetDevice() const { return device_.get(); }
  KvStore& Kv() { return *kv_; }
  // Milliseconds spent inside session runs since load.
  double RunMillis() const { return run_millis_; }
  // How often a buffer that passes reuse (inputs, past; with shape buckets the outputs too) had to
  // move to grow, since load. Each move retires every CUDA graph captured before it (they hold the
  // old addresses); steady traffic makes none.
  uint64_t PassBufferMoves() const { return buffer_moves_ + kv_->PastMoves(); }
  // Whether passes run padded to fixed shapes (shape_buckets, or implied by cuda_graphs).
  bool ShapeBuckets() const { return shape_buckets_; }
  int LengthMultiple() const { return length_multiple_; }
  // Whether passes without a past may run split into states and items (ExactPassShape).
  bool SplitsStates() const { return info_.has_state_span && info_.has_logits_index && !shape_buckets_; }

  ExtendResult Extend(const std::vector<ExtendRow>& rows, bool want_logits);

 private:
  // Writes the pass's integer inputs into the staging buffer (StagePassInputs, pass_inputs.h), sends
  // them with one copy and binds them. (The past is bound by Extend(), a zero-sized one included.)
  void BindInputs(const std::vector<ExtendRow>& rows, const PassShape& shape, bool want_logits, Ort::IoBinding& binding);
  // Binds the present and scoring-head outputs to the fixed buffers (shape buckets).
  void BindFixedOutputs(const PassShape& shape, Ort::IoBinding& binding);
  // The CUDA graph id of `shape` at the buffers' current addresses; -1: run without a graph (the
  // cap on captured graphs is reached).
  int GraphId(const PassShape& shape);
  // A stock graph's logits [B, positions, vocab] on the host, reduced to the result's layout.
  void ReduceHostLogits(const std::vector<ExtendRow>& rows, const Ort::Value& logits, ExtendResult& result) const;

  // Declaration order is release order reversed; ~Decoder releases explicitly, in this order:
  // kv_ and staging, device_, session_, stream_.
  std::shared_ptr<CudaStream> stream_;  // CUDA only: the session's compute stream
  std::unique_ptr<Ort::Session> session_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<HostStaging> staging_;
  DeviceBuffer inputs_;  // the staged inputs on the device
  // Shape buckets only: the present tensors (every layer's keys and values) and the scoring head's
  // outputs, bound at fixed addresses; grown when a larger shape comes (buffer_moves_ counts it).
  DeviceBuffer present_buffer_, head_buffer_;
  uint64_t buffer_moves_ = 0;
  std::map<std::pair<uint64_t, PassShape>, int> graph_ids_;  // (PassBufferMoves(), shape) -> gpu_graph_id
  bool shape_buckets_ = false;
  int length_multiple_ = 1;
  bool cuda_graphs_ = false;
  Ort::MemoryInfo host_info_{nullptr};
  ModelInfo info_;
  KvNames kv_names_;
  double run_millis_ = 0;
};

}  // namespace decide
