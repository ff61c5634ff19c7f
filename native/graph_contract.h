// The graph's I/O contract: which inputs and outputs a decoder graph may have, with which element
// types and ranks, and what the engine learns from them (ModelInfo). The names are Optimum's
// (input_ids, attention_mask, position_ids, past_key_values.{i}.key/value, use_cache_branch ->
// logits, present.{i}.key/value) plus the engine's own decide_* names below, which the graphs the
// engine writes carry: the scoring head's by src/engine/lm-head-rewrite.ts (same spellings there),
// decide_segment_ids and decide_state_span by src/models/builder/decoder-graph.ts. What a pass
// puts into those inputs is decoder.h's batch layout (built in pass_inputs.h).
// ReadModelInfo refuses any other input, and any graph that breaks the contract, at load, with
// EngineError(ERR_MODEL_LOAD) naming the model path and what is wrong.
// Thread: ReadModelInfo runs once, in the Decoder's constructor (the load's AsyncWorker, on the
// libuv pool). Ownership: it reads the session's metadata only; what it returns is the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "kv/kv_block.h"

namespace decide {

inline constexpr const char* kLogitsIndexInput = "decide_logits_index";
inline constexpr const char* kTokenIndexInput = "decide_token_index";
inline constexpr const char* kSegmentIdsInput = "decide_segment_ids";
inline constexpr const char* kStateSpanInput = "decide_state_span";
inline constexpr const char* kLabelIndexInput = "decide_label_index";
inline constexpr const char* kPositionTokenIndexInput = "decide_position_token_index";
// The scoring head of rewrites before version 5 (row * K + k): refused with a message.
inline constexpr const char* kPositionIndexInput = "decide_position_index";
inline constexpr const char* kLabelLogitsOutput = "decide_label_logits";
inline constexpr const char* kLogSumExpOutput = "decide_log_sum_exp";

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
  // That index is decide_token_index, flat over the pass's rows x tokens (the rewrite's), rather
  // than decide_logits_index, each row's own positions (older or hand-made graphs).
  bool flat_token_index = false;
  // The graph returns the wanted labels' logits and log-sum-exps itself (the scoring head, decoder.h).
  bool has_label_head = false;
  // The graph has decide_segment_ids [B, P + S]: it can run packed rows.
  bool has_segment_ids = false;
  // The graph has decide_state_span [Ls]: it can run a pass split into states and items.
  bool has_state_span = false;
  bool has_use_cache_branch = false;  // Optimum "merged" decoders
};

// The graph's KV inputs and outputs, by layer.
struct KvNames {
  std::vector<std::string> past_keys, past_values;
  std::vector<std::string> present_keys, present_values;
};

// Hints from config.json (DecoderOptions), used only where the graph leaves a dimension symbolic.
struct ConfigHints {
  int num_kv_heads = 0;
  int head_dim = 0;
  int64_t vocab_size = 0;
};

// Reads and checks `session`'s inputs and outputs against the contract above; fills `names`.
// Throws EngineError(ERR_MODEL_LOAD), its message starting with `model_path`.
ModelInfo ReadModelInfo(const Ort::Session& session, const std::string& model_path, const ConfigHints& hints,
                        KvNames* names);

}  // namespace decide
