#include "graph_contract.h"

#include <cstddef>
#include <regex>
#include <string>
#include <vector>

#include "errors.h"

namespace decide {
namespace {

size_t ElemSize(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return 2;
    default:
      throw EngineError(kErrModelLoad, "KV cache and logits must be float32 or float16");
  }
}

bool IsIntegerType(ONNXTensorElementDataType type) {
  return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
}

}  // namespace

ModelInfo ReadModelInfo(const Ort::Session& session, const std::string& model_path, const ConfigHints& hints,
                        KvNames* names) {
  Ort::AllocatorWithDefaultOptions allocator;
  ModelInfo info;
  auto fail = [&](const std::string& why) { throw EngineError(kErrModelLoad, model_path + ": " + why); };

  std::regex past_re(R"(past_key_values\.(\d+)\.(key|value))");
  std::regex present_re(R"(present\.(\d+)\.(key|value))");
  std::vector<std::string> past_keys, past_values, present_keys, present_values;
  bool has_ids = false, has_mask = false, has_position_index = false;
  std::vector<int64_t> kv_dims;

  auto put = [](std::vector<std::string>& names, size_t index, const std::string& name) {
    if (names.size() <= index) names.resize(index + 1);
    names[index] = name;
  };

  for (size_t i = 0; i < session.GetInputCount(); ++i) {
    std::string name = session.GetInputNameAllocated(i, allocator).get();
    auto type_info = session.GetInputTypeInfo(i);
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    ONNXTensorElementDataType type = tensor_info.GetElementType();
    std::smatch m;
    if (name == "input_ids") {
      has_ids = true;
      info.ids_type = type;
    } else if (name == "attention_mask") {
      has_mask = true;
      info.mask_type = type;
    } else if (name == "position_ids") {
      info.has_position_ids = true;
      info.positions_type = type;
    } else if (name == kLogitsIndexInput) {
      info.has_logits_index = true;
      // [batch, positions]. A 1-D index is a rewrite cached by an engine before stamped rewrites;
      // src/engine/scoring-graph.ts makes such a cache again, so only a hand-made graph gets here.
      if (tensor_info.GetShape().size() != 2) fail("decide_logits_index must be 2-D [batch, positions]");
    } else if (name == kTokenIndexInput) {
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || tensor_info.GetShape().size() != 2) {
        fail("decide_token_index must be a 2-D int64 tensor [batch, positions]");
      }
      info.has_logits_index = true;
      info.flat_token_index = true;
    } else if (name == kPositionIndexInput) {
      // src/engine/scoring-graph.ts makes such a cache again, so only a graph given directly gets here.
      fail("decide_position_index is the scoring head of an older version (the head now takes "
           "decide_position_token_index): load the model's own graph, and the engine makes the scoring graph again");
    } else if (name == kLabelIndexInput || name == kPositionTokenIndexInput) {
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || tensor_info.GetShape().size() != 1) {
        // A 2-D one is the scoring head of an older rewrite (GatherND over (row, position, token)):
        // src/engine/scoring-graph.ts makes such a cache again, so only a graph given directly gets here.
        fail(name + " must be a 1-D int64 tensor of flat indices (a 2-D one is a scoring graph made by an older "
                    "version: load the model's own graph, and the engine makes the scoring graph again)");
      }
      (name == kLabelIndexInput ? info.has_label_head : has_position_index) = true;
    } else if (name == kSegmentIdsInput) {
      info.has_segment_ids = true;
      if (!IsIntegerType(type)) fail("decide_segment_ids must be int64 or int32");
      info.segments_type = type;
    } else if (name == kStateSpanInput) {
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || tensor_info.GetShape().size() != 1) fail("decide_state_span must be a 1-D int64 tensor");
      info.has_state_span = true;
    } else if (name == "use_cache_branch") {
      info.has_use_cache_branch = true;
    } else if (std::regex_match(name, m, past_re)) {
      size_t layer = std::stoul(m[1].str());
      put(m[2] == "key" ? past_keys : past_values, layer, name);
      info.kv_type = type;
      kv_dims = tensor_info.GetShape();
    } else {
      fail("unexpected graph input '" + name +
           "' (expected input_ids, attention_mask, position_ids, past_key_values.{i}.key/value)");
    }
  }
  if (!has_ids || !has_mask) fail("the graph needs inputs input_ids and attention_mask");
  if (past_keys.empty()) {
    fail("the graph has no past_key_values.{i}.key inputs: export it with past "
         "(optimum-cli export onnx --task text-generation-with-past)");
  }
  if (!IsIntegerType(info.ids_type) || !IsIntegerType(info.mask_type) ||
      (info.has_position_ids && !IsIntegerType(info.positions_type))) {
    fail("input_ids, attention_mask and position_ids must be int64 or int32");
  }

  bool has_logits = false, has_label_logits = false, has_log_sum_exp = false;
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    std::string name = session.GetOutputNameAllocated(i, allocator).get();
    auto type_info = session.GetOutputTypeInfo(i);
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    std::smatch m;
    if (name == "logits") {
      has_logits = true;
      info.logits_type = tensor_info.GetElementType();
      auto dims = tensor_info.GetShape();
      if (dims.size() == 3 && dims[2] > 0) info.vocab_size = dims[2];
    } else if (name == kLabelLogitsOutput) {
      has_label_logits = tensor_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    } else if (name == kLogSumExpOutput) {
      has_log_sum_exp = tensor_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    } else if (std::regex_match(name, m, present_re)) {
      put(m[2] == "key" ? present_keys : present_values, std::stoul(m[1].str()), name);
    }
  }
  if (info.has_logits_index && !info.flat_token_index && !has_logits) {
    fail("a graph with decide_logits_index needs the 'logits' output");
  }
  if (info.has_label_head) {
    if (!info.flat_token_index || !has_position_index || !has_label_logits || !has_log_sum_exp) {
      fail("a graph with decide_label_index needs decide_token_index, decide_position_token_index and float outputs "
           "decide_label_logits and decide_log_sum_exp");
    }
  } else if (has_position_index) {
    fail("a graph with decide_position_token_index needs decide_label_index too");
  } else if (!has_logits) {
    fail("the graph has no 'logits' output");
  }

  size_t layers = past_keys.size();
  if (past_values.size() != layers || present_keys.size() != layers || present_values.size() != layers) {
    fail("past_key_values / present inputs and outputs do not pair up layer by layer");
  }
  for (size_t l = 0; l < layers; ++l) {
    if (past_keys[l].empty() || past_values[l].empty() || present_keys[l].empty() || present_values[l].empty()) {
      fail("missing KV input or output for layer " + std::to_string(l));
    }
  }
  names->past_keys = past_keys;
  names->past_values = past_values;
  names->present_keys = present_keys;
  names->present_values = present_values;

  if (kv_dims.size() != 4) fail("past_key_values must be 4-D [batch, kv_heads, past, head_dim]");
  info.kv.num_layers = static_cast<int>(layers);
  info.kv.num_kv_heads = kv_dims[1] > 0 ? static_cast<int>(kv_dims[1]) : hints.num_kv_heads;
  info.kv.head_dim = kv_dims[3] > 0 ? static_cast<int>(kv_dims[3]) : hints.head_dim;
  info.kv.elem_size = ElemSize(info.kv_type);
  if (has_logits) ElemSize(info.logits_type);
  if (info.kv.num_kv_heads <= 0 || info.kv.head_dim <= 0) {
    fail("cannot tell num_key_value_heads / head_dim from the graph or config.json");
  }
  if (info.vocab_size <= 0) info.vocab_size = hints.vocab_size;
  if (info.vocab_size <= 0) fail("cannot tell the vocabulary size from the graph or config.json");
  return info;
}

}  // namespace decide
