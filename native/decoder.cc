#include "decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <regex>

#include "errors.h"
#include "ort_runtime.h"
#include "session_options.h"

namespace decide {
namespace {

constexpr const char* kLogitsIndexInput = "decide_logits_index";
constexpr const char* kTokenIndexInput = "decide_token_index";
constexpr const char* kSegmentIdsInput = "decide_segment_ids";
constexpr const char* kStateSpanInput = "decide_state_span";
constexpr const char* kLabelIndexInput = "decide_label_index";
constexpr const char* kPositionTokenIndexInput = "decide_position_token_index";
// The scoring head of rewrites before version 5 (row * K + k): refused with a message.
constexpr const char* kPositionIndexInput = "decide_position_index";
constexpr const char* kLabelLogitsOutput = "decide_label_logits";
constexpr const char* kLogSumExpOutput = "decide_log_sum_exp";
// Each staged input starts at a multiple of this (CUDA kernels want aligned tensors).
constexpr size_t kInputAlignment = 256;
// At most this many CUDA graphs are captured (each holds its kernels' memory); later shapes run
// without one.
constexpr int kMaxCudaGraphs = 64;
// A fixed buffer that must grow takes this much headroom, so that slightly larger shapes later
// do not move it again (each move retires the CUDA graphs captured on it).
constexpr double kFixedBufferHeadroom = 1.25;

size_t AlignUp(size_t bytes) { return (bytes + kInputAlignment - 1) / kInputAlignment * kInputAlignment; }

// A padding row of a bucketed pass: one token (id 0, position 0), no past, nothing read. One real
// token keeps its attention well defined (a row with every key masked could make NaN).
const int32_t kPaddingToken = 0;

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

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// The integer inputs of one pass, laid out in one staging buffer: each at an aligned offset, in
// the element type its graph input has.
struct StagedInput {
  const char* name;
  ONNXTensorElementDataType type;
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
  size_t offset = 0;
  size_t Bytes() const { return values.size() * (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 ? 4 : 8); }
};

}  // namespace

Decoder::Decoder(const DecoderOptions& options) {
  shape_buckets_ = options.shape_buckets || options.cuda_graphs;
  length_multiple_ = std::max(options.length_multiple, 1);
  cuda_graphs_ = options.cuda_graphs;
  if (cuda_graphs_ && options.provider != Provider::kCuda) {
    throw EngineError(kErrInput, "CUDA graphs need the cuda provider");
  }
  SessionSettings settings;
  settings.cuda_graphs = cuda_graphs_;
  settings.provider = options.provider;
  settings.intra_op_threads = options.intra_op_threads;
  settings.device_id = options.device_id;
  settings.log_severity = options.log_severity;
  session_ = OpenSession(settings, options.model_path, &stream_, options.profile_prefix);
  host_info_ = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  ReadModelInfo(options);
  if (cuda_graphs_ && !info_.has_label_head) {
    throw EngineError(kErrInput, options.model_path + ": CUDA graphs need the scoring head (gatherLogits on, and a graph "
                                 "the LM-head rewrite applies to): a stock graph's logits leave through the host");
  }
  device_ = options.provider == Provider::kCuda ? MakeCudaDevice(*session_, stream_, options.device_id, cuda_graphs_)
                                                : MakeCpuDevice(std::max(1, options.intra_op_threads));
  kv_ = std::make_unique<KvStore>(device_.get(), info_.kv);
  staging_ = std::make_unique<HostStaging>(device_.get());
}

Decoder::~Decoder() {
  // Explicit, because the CUDA provider's memory must go back while its allocator, session and
  // stream exist: buffers, then the Device (and its allocator), then the session, then the stream.
  // A failed device (a CUDA error such as an illegal address stays with the context) cannot be
  // waited on: the engine's buffers are released quietly, and the session and the device are left
  // to the process's end, because ONNX Runtime's own frees throw from its destructors there
  // (cudaFreeHost, error 700: seen on an H200), which would end the process.
  const bool device_ok = !device_ || device_->TrySynchronize();
  kv_.reset();
  staging_.reset();
  inputs_ = DeviceBuffer();
  present_buffer_ = DeviceBuffer();
  head_buffer_ = DeviceBuffer();
  if (!device_ok) {
    (void)device_.release();
    (void)session_.release();
    return;
  }
  device_.reset();
  session_.reset();
  stream_.reset();
}

void Decoder::ReadModelInfo(const DecoderOptions& options) {
  Ort::AllocatorWithDefaultOptions allocator;
  const std::string& path = options.model_path;
  auto fail = [&](const std::string& why) { throw EngineError(kErrModelLoad, path + ": " + why); };

  std::regex past_re(R"(past_key_values\.(\d+)\.(key|value))");
  std::regex present_re(R"(present\.(\d+)\.(key|value))");
  std::vector<std::string> past_keys, past_values, present_keys, present_values;
  bool has_ids = false, has_mask = false, has_position_index = false;
  std::vector<int64_t> kv_dims;

  auto put = [](std::vector<std::string>& names, size_t index, const std::string& name) {
    if (names.size() <= index) names.resize(index + 1);
    names[index] = name;
  };

  for (size_t i = 0; i < session_->GetInputCount(); ++i) {
    std::string name = session_->GetInputNameAllocated(i, allocator).get();
    auto type_info = session_->GetInputTypeInfo(i);
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    ONNXTensorElementDataType type = tensor_info.GetElementType();
    std::smatch m;
    if (name == "input_ids") {
      has_ids = true;
      info_.ids_type = type;
    } else if (name == "attention_mask") {
      has_mask = true;
      info_.mask_type = type;
    } else if (name == "position_ids") {
      info_.has_position_ids = true;
      info_.positions_type = type;
    } else if (name == kLogitsIndexInput) {
      info_.has_logits_index = true;
      // [batch, positions]. A 1-D index is a rewrite cached by an engine before stamped rewrites;
      // src/engine/scoring-graph.ts makes such a cache again, so only a hand-made graph gets here.
      if (tensor_info.GetShape().size() != 2) fail("decide_logits_index must be 2-D [batch, positions]");
    } else if (name == kTokenIndexInput) {
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || tensor_info.GetShape().size() != 2) {
        fail("decide_token_index must be a 2-D int64 tensor [batch, positions]");
      }
      info_.has_logits_index = true;
      info_.flat_token_index = true;
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
      (name == kLabelIndexInput ? info_.has_label_head : has_position_index) = true;
    } else if (name == kSegmentIdsInput) {
      info_.has_segment_ids = true;
      if (!IsIntegerType(type)) fail("decide_segment_ids must be int64 or int32");
      info_.segments_type = type;
    } else if (name == kStateSpanInput) {
      if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 || tensor_info.GetShape().size() != 1) fail("decide_state_span must be a 1-D int64 tensor");
      info_.has_state_span = true;
    } else if (name == "use_cache_branch") {
      info_.has_use_cache_branch = true;
    } else if (std::regex_match(name, m, past_re)) {
      size_t layer = std::stoul(m[1].str());
      put(m[2] == "key" ? past_keys : past_values, layer, name);
      info_.kv_type = type;
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
  if (!IsIntegerType(info_.ids_type) || !IsIntegerType(info_.mask_type) ||
      (info_.has_position_ids && !IsIntegerType(info_.positions_type))) {
    fail("input_ids, attention_mask and position_ids must be int64 or int32");
  }

  bool has_logits = false, has_label_logits = false, has_log_sum_exp = false;
  for (size_t i = 0; i < session_->GetOutputCount(); ++i) {
    std::string name = session_->GetOutputNameAllocated(i, allocator).get();
    auto type_info = session_->GetOutputTypeInfo(i);
    auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
    std::smatch m;
    if (name == "logits") {
      has_logits = true;
      info_.logits_type = tensor_info.GetElementType();
      auto dims = tensor_info.GetShape();
      if (dims.size() == 3 && dims[2] > 0) info_.vocab_size = dims[2];
    } else if (name == kLabelLogitsOutput) {
      has_label_logits = tensor_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    } else if (name == kLogSumExpOutput) {
      has_log_sum_exp = tensor_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    } else if (std::regex_match(name, m, present_re)) {
      put(m[2] == "key" ? present_keys : present_values, std::stoul(m[1].str()), name);
    }
  }
  if (info_.has_logits_index && !info_.flat_token_index && !has_logits) {
    fail("a graph with decide_logits_index needs the 'logits' output");
  }
  if (info_.has_label_head) {
    if (!info_.flat_token_index || !has_position_index || !has_label_logits || !has_log_sum_exp) {
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
  past_key_names_ = past_keys;
  past_value_names_ = past_values;
  present_key_names_ = present_keys;
  present_value_names_ = present_values;

  if (kv_dims.size() != 4) fail("past_key_values must be 4-D [batch, kv_heads, past, head_dim]");
  info_.kv.num_layers = static_cast<int>(layers);
  info_.kv.num_kv_heads = kv_dims[1] > 0 ? static_cast<int>(kv_dims[1]) : options.num_kv_heads;
  info_.kv.head_dim = kv_dims[3] > 0 ? static_cast<int>(kv_dims[3]) : options.head_dim;
  info_.kv.elem_size = ElemSize(info_.kv_type);
  if (has_logits) ElemSize(info_.logits_type);
  if (info_.kv.num_kv_heads <= 0 || info_.kv.head_dim <= 0) {
    fail("cannot tell num_key_value_heads / head_dim from the graph or config.json");
  }
  if (info_.vocab_size <= 0) info_.vocab_size = options.vocab_size;
  if (info_.vocab_size <= 0) fail("cannot tell the vocabulary size from the graph or config.json");
}

PassShape Decoder::ExactShape(const std::vector<ExtendRow>& rows, bool want_logits) const {
  PassShape shape;
  shape.rows = static_cast<int>(rows.size());
  int logits_per_row = 0;
  int64_t labels = 0, positions = 0;
  for (const ExtendRow& row : rows) {
    shape.past_len = std::max(shape.past_len, row.past_len);
    shape.new_len = std::max(shape.new_len, row.num_tokens);
    logits_per_row = std::max(logits_per_row, static_cast<int>(row.logits_positions.size()));
    if (!want_logits) continue;
    positions += static_cast<int64_t>(row.logits_positions.size());
    for (const ExtendRow::Labels& l : row.labels) labels += l.count;
  }
  // The index input needs at least one position per row, even when no logits are read; a head
  // that reads none reads one dummy entry of each (an empty tensor is left out of the way). A flat
  // index reads one dummy token in all: each entry costs the head a whole vocabulary of logits,
  // gigabytes for the thousands of short rows of a prefix pass.
  shape.index_width = std::max(want_logits ? logits_per_row : 0, 1);
  shape.one_dummy_index = !want_logits && info_.flat_token_index;
  // Split only where the head gathers the wanted positions (a stock graph's logits come back for
  // every slot, read in place by ReduceHostLogits).
  if (SplitsStates() && shape.past_len == 0) {
    SplitSpan span;
    for (const ExtendRow& row : rows) span.Add(row);
    if (span.Splits()) {
      shape.state_len = span.lead;
      shape.new_len = span.NewLen();
    }
  }
  if (info_.has_label_head) {
    shape.labels = std::max<int64_t>(labels, 1);
    shape.positions = std::max<int64_t>(positions, 1);
  }
  return shape;
}

void Decoder::BindInputs(const std::vector<ExtendRow>& rows, const PassShape& shape, bool want_logits,
                         Ort::IoBinding& binding) {
  const int batch = shape.rows;
  const int past_len = shape.past_len, new_len = shape.new_len;
  const int total_len = past_len + new_len;
  const int index_width = shape.index_width;

  std::deque<StagedInput> inputs;  // a deque: add() hands out references that later adds keep valid
  auto add = [&](const char* name, ONNXTensorElementDataType type, std::vector<int64_t> shape) -> std::vector<int64_t>& {
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    inputs.push_back(StagedInput{name, type, std::move(shape), std::vector<int64_t>(count, 0)});
    return inputs.back().values;
  };
  auto& ids = add("input_ids", info_.ids_type, {batch, new_len});
  auto& mask = add("attention_mask", info_.mask_type, {batch, total_len});
  std::vector<int64_t>* positions = info_.has_position_ids ? &add("position_ids", info_.positions_type, {batch, new_len}) : nullptr;
  std::vector<int64_t>* segments = info_.has_segment_ids ? &add(kSegmentIdsInput, info_.segments_type, {batch, total_len}) : nullptr;
  std::vector<int64_t>* logits_index =
      info_.has_logits_index
          ? &add(info_.flat_token_index ? kTokenIndexInput : kLogitsIndexInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.IndexRows(), index_width})
          : nullptr;
  for (int r = 0; r < batch; ++r) {
    const ExtendRow& row = rows[r];
    // Where the row's token i sits among the pass's new tokens: in place, or in a split pass its
    // items from the state part's end on.
    auto slot = [&](int i) { return shape.state_len > 0 && i >= row.lead ? shape.state_len + (i - row.lead) : i; };
    int64_t* mask_row = mask.data() + static_cast<size_t>(r) * total_len;
    std::fill(mask_row, mask_row + row.past_len, 1);
    for (int i = 0; i < row.num_tokens; ++i) {
      const size_t at = static_cast<size_t>(slot(i));
      ids[static_cast<size_t>(r) * new_len + at] = row.tokens[i];
      if (positions) (*positions)[static_cast<size_t>(r) * new_len + at] = row.past_len + (row.offsets ? row.offsets[i] : i);
      mask_row[past_len + at] = 1;
    }
    if (segments && row.segments != nullptr) {
      // The past and the padding stay segment 0; padding is masked anyway.
      int64_t* segment_row = segments->data() + static_cast<size_t>(r) * total_len + past_len;
      for (int i = 0; i < row.num_tokens; ++i) segment_row[slot(i)] = row.segments[i];
    }
    if (logits_index && r < shape.IndexRows()) {
      // Rows with fewer wanted positions repeat their last one (or read position 0): any valid index.
      // decide_token_index counts over the whole pass (row r's tokens start at r * new_len).
      const auto& wanted = row.logits_positions;
      const int64_t row_start = info_.flat_token_index ? static_cast<int64_t>(r) * new_len : 0;
      for (int k = 0; k < index_width; ++k) {
        (*logits_index)[static_cast<size_t>(r) * index_width + k] =
            row_start + (wanted.empty() ? 0 : slot(wanted[std::min<size_t>(k, wanted.size() - 1)]));
      }
    }
  }
  if (info_.has_state_span) add(kStateSpanInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.state_len});
  if (info_.has_label_head) {
    // Flat indices, in the result's order: per wanted label (row * K + k) * vocab + token in the
    // head's [rows, K, vocab] logits; per wanted position (row, k) the same index of its first
    // label (any token's logit minus its log-softmax is the log-sum-exp; a label's keeps both
    // terms moderate), token 0 for a position without labels; then dummy entries (0: row 0,
    // position 0, token 0) up to the pass shape's counts.
    std::vector<int64_t> label_index, position_index;
    const int64_t vocab = info_.vocab_size;
    if (want_logits) {
      for (int r = 0; r < batch; ++r) {
        const ExtendRow& row = rows[r];
        for (size_t k = 0; k < row.logits_positions.size(); ++k) {
          const int64_t slot_k = static_cast<int64_t>(r) * index_width + static_cast<int64_t>(k);
          const ExtendRow::Labels& labels = row.labels[k];
          position_index.push_back(slot_k * vocab + (labels.count > 0 ? labels.ids[0] : 0));
          for (int j = 0; j < labels.count; ++j) label_index.push_back(slot_k * vocab + labels.ids[j]);
        }
      }
    }
    label_index.resize(static_cast<size_t>(shape.labels), 0);
    position_index.resize(static_cast<size_t>(shape.positions), 0);
    add(kLabelIndexInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.labels}) = std::move(label_index);
    add(kPositionTokenIndexInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.positions}) = std::move(position_index);
  }

  size_t total = 0;
  for (StagedInput& input : inputs) {
    input.offset = total;
    total += AlignUp(input.Bytes());
  }
  char* host = staging_->Reserve(total);
  for (const StagedInput& input : inputs) {
    if (input.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      auto* out = reinterpret_cast<int32_t*>(host + input.offset);
      for (size_t i = 0; i < input.values.size(); ++i) out[i] = static_cast<int32_t>(input.values[i]);
    } else {
      std::memcpy(host + input.offset, input.values.data(), input.values.size() * 8);
    }
  }
  if (inputs_.Bytes() < total) {
    inputs_ = DeviceBuffer(device_.get(), shape_buckets_ ? static_cast<size_t>(total * kFixedBufferHeadroom) : total);
    ++buffer_moves_;
  }
  device_->CopyFromHost(inputs_.Data(), host, total);
  for (const StagedInput& input : inputs) {
    Ort::Value value = Ort::Value::CreateTensor(device_->MemoryInfo(), inputs_.Data() + input.offset, input.Bytes(),
                                                input.shape.data(), input.shape.size(), input.type);
    binding.BindInput(input.name, value);
  }
}

void Decoder::BindFixedOutputs(const PassShape& shape, Ort::IoBinding& binding) {
  const KvShape& kv = info_.kv;
  const std::vector<int64_t> present_shape = {shape.rows, kv.num_kv_heads, shape.past_len + shape.new_len, kv.head_dim};
  const size_t present_bytes = static_cast<size_t>(shape.rows) * kv.num_kv_heads * (shape.past_len + shape.new_len) *
                               kv.head_dim * kv.elem_size;
  const size_t present_pitch = AlignUp(present_bytes);
  const size_t labels_bytes = static_cast<size_t>(shape.labels) * sizeof(float);
  const size_t head_bytes = AlignUp(labels_bytes) + static_cast<size_t>(shape.positions) * sizeof(float);
  auto ensure = [&](DeviceBuffer& buffer, size_t bytes) {
    if (buffer.Bytes() >= bytes) return;
    buffer = DeviceBuffer(device_.get(), static_cast<size_t>(bytes * kFixedBufferHeadroom));
    ++buffer_moves_;
  };
  ensure(present_buffer_, present_pitch * 2 * kv.num_layers);
  ensure(head_buffer_, head_bytes);
  for (int l = 0; l < kv.num_layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      char* data = present_buffer_.Data() + (2 * static_cast<size_t>(l) + which) * present_pitch;
      Ort::Value value = Ort::Value::CreateTensor(device_->MemoryInfo(), data, present_bytes, present_shape.data(),
                                                  present_shape.size(), info_.kv_type);
      binding.BindOutput(which == 0 ? present_key_names_[l].c_str() : present_value_names_[l].c_str(), value);
    }
  }
  const int64_t labels_shape[] = {shape.labels};
  const int64_t positions_shape[] = {shape.positions};
  binding.BindOutput(kLabelLogitsOutput, Ort::Value::CreateTensor(device_->MemoryInfo(), head_buffer_.Data(), labels_bytes,
                                                                  labels_shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT));
  binding.BindOutput(kLogSumExpOutput,
                     Ort::Value::CreateTensor(device_->MemoryInfo(), head_buffer_.Data() + AlignUp(labels_bytes),
                                              static_cast<size_t>(shape.positions) * sizeof(float), positions_shape, 1,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT));
}

int Decoder::GraphId(const PassShape& shape) {
  auto key = std::make_pair(PassBufferMoves(), shape);
  auto it = graph_ids_.find(key);
  if (it != graph_ids_.end()) return it->second;
  if (static_cast<int>(graph_ids_.size()) >= kMaxCudaGraphs) return -1;
  const int id = static_cast<int>(graph_ids_.size());
  graph_ids_.emplace(key, id);
  return id;
}

ExtendResult Decoder::Extend(const std::vector<ExtendRow>& real_rows, bool want_logits) {
  const KvShape& kv = info_.kv;
  for (const ExtendRow& row : real_rows) {
    if (row.segments != nullptr && !info_.has_segment_ids) {
      throw EngineError(kErrRuntime, "a packed row needs a graph with decide_segment_ids");
    }
    if (info_.has_label_head && want_logits && row.labels.size() != row.logits_positions.size()) {
      throw EngineError(kErrRuntime, "every wanted position needs its labels");
    }
  }
  const PassShape exact = ExactShape(real_rows, want_logits);
  const PassShape bucketed = shape_buckets_ ? BucketPassShape(exact) : exact;
  const bool past_padded = std::any_of(real_rows.begin(), real_rows.end(), [&](const ExtendRow& row) {
    return row.past_len > 0 && row.past_len < bucketed.past_len;
  });
  const PassShape shape = AlignPassLength(bucketed, length_multiple_, past_padded);
  std::vector<ExtendRow> padded;
  if (shape.rows > exact.rows) {
    padded = real_rows;
    ExtendRow padding;
    padding.tokens = &kPaddingToken;
    padding.num_tokens = 1;
    padded.resize(shape.rows, padding);
  }
  const std::vector<ExtendRow>& rows = padded.empty() ? real_rows : padded;
  const int batch = shape.rows, past_len = shape.past_len, new_len = shape.new_len;

  Ort::IoBinding binding(*session_);
  BindInputs(rows, shape, want_logits, binding);

  // Past: each row's prefix KV forked into the pass past, padding zero-filled, in one batch.
  std::vector<PastRef> pasts;
  pasts.reserve(rows.size());
  for (const ExtendRow& row : rows) pasts.push_back(PastRef{row.past, row.past_len});
  kv_->ForkPast(pasts, past_len);
  const size_t buffer_bytes = kv_->PastBytesPerBuffer(batch, past_len);
  static char empty_past[64];  // ORT wants a non-null pointer even for a zero-sized tensor
  const std::vector<int64_t> past_shape = {batch, kv.num_kv_heads, past_len, kv.head_dim};
  // A zero-sized past is bound as a host tensor (it holds no bytes to copy), except on fixed
  // buffers, where every input of a captured graph must be on the device: any device address will do.
  const bool past_on_device = buffer_bytes > 0 || shape_buckets_;
  std::vector<Ort::Value> past_values;
  for (int l = 0; l < kv.num_layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      void* data = buffer_bytes > 0 ? static_cast<void*>(kv_->PastBuffer(l, which == 1))
                                    : (past_on_device ? static_cast<void*>(inputs_.Data()) : static_cast<void*>(empty_past));
      const OrtMemoryInfo* info = past_on_device ? device_->MemoryInfo() : static_cast<const OrtMemoryInfo*>(host_info_);
      past_values.push_back(
          Ort::Value::CreateTensor(info, data, buffer_bytes, past_shape.data(), past_shape.size(), info_.kv_type));
      binding.BindInput(which == 0 ? past_key_names_[l].c_str() : past_value_names_[l].c_str(), past_values.back());
    }
  }
  bool use_cache_branch = true;
  int64_t one = 1;
  Ort::Value cache_branch{nullptr};
  if (info_.has_use_cache_branch) {
    // A scalar the graph reads on the host (an If condition): bound there, never copied.
    cache_branch = Ort::Value::CreateTensor<bool>(host_info_, &use_cache_branch, 1, &one, 1);
    binding.BindInput("use_cache_branch", cache_branch);
  }
  const bool fixed_outputs = shape_buckets_ && info_.has_label_head;
  if (fixed_outputs) {
    BindFixedOutputs(shape, binding);
  } else {
    for (int l = 0; l < kv.num_layers; ++l) {
      binding.BindOutput(present_key_names_[l].c_str(), device_->MemoryInfo());
      binding.BindOutput(present_value_names_[l].c_str(), device_->MemoryInfo());
    }
    // Outputs the host reads are bound to it; an unbound graph output is an error in ORT.
    if (info_.has_label_head) {
      binding.BindOutput(kLabelLogitsOutput, host_info_);
      binding.BindOutput(kLogSumExpOutput, host_info_);
    } else {
      binding.BindOutput("logits", host_info_);
    }
  }

  Ort::RunOptions run_options;
  if (cuda_graphs_) run_options.AddConfigEntry("gpu_graph_id", std::to_string(GraphId(shape)).c_str());
  const auto run_start = std::chrono::steady_clock::now();
  try {
    session_->Run(run_options, binding);
    binding.SynchronizeOutputs();
  } catch (const Ort::Exception& e) {
    const std::string what = e.what();
    if (IsOutOfMemory(what)) throw EngineError(kErrOutOfMemory, "forward pass ran out of memory: " + what);
    throw EngineError(kErrRuntime, "forward pass failed: " + what);
  }
  run_millis_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start).count();

  std::vector<Ort::Value> outputs = binding.GetOutputValues();
  ExtendResult result;
  result.batch = batch;
  result.computed_tokens = static_cast<int64_t>(batch) * new_len;
  result.present.past_len = past_len;
  result.present.new_len = new_len;
  auto present = std::make_shared<std::vector<Ort::Value>>();
  for (int l = 0; l < 2 * kv.num_layers; ++l) present->push_back(std::move(outputs[l]));
  for (int l = 0; l < kv.num_layers; ++l) {
    result.present.keys.push_back(static_cast<const char*>((*present)[2 * l].GetTensorRawData()));
    result.present.values.push_back(static_cast<const char*>((*present)[2 * l + 1].GetTensorRawData()));
  }
  // Fixed buffers are the next pass's too: no view may keep them (KvStore::ViewRow needs an owner).
  if (!fixed_outputs) {
    result.present.owner = std::move(present);
    result.present.owner_bytes = kv.BytesPerToken() * static_cast<size_t>(batch) * static_cast<size_t>(past_len + new_len);
  }
  result.wanted_begin.assign(1, 0);
  result.label_begin.assign(1, 0);
  for (const ExtendRow& row : rows) {
    const int wanted = want_logits ? static_cast<int>(row.logits_positions.size()) : 0;
    result.wanted_begin.push_back(result.wanted_begin.back() + wanted);
    for (int k = 0; k < wanted; ++k) {
      result.label_begin.push_back(result.label_begin.back() + (k < static_cast<int>(row.labels.size()) ? row.labels[k].count : 0));
    }
  }
  const size_t head_outputs = 2 * static_cast<size_t>(kv.num_layers);
  if (info_.has_label_head) {
    // The pass shape holds every wanted label and position (ExactShape counts them; buckets only grow).
    const size_t label_count = static_cast<size_t>(shape.labels), lse_count = static_cast<size_t>(shape.positions);
    const size_t wanted_labels = result.label_begin.back(), wanted_positions = result.wanted_begin.back();
    const size_t returned_labels = fixed_outputs ? label_count : outputs[head_outputs].GetTensorTypeAndShapeInfo().GetElementCount();
    const size_t returned_lse = fixed_outputs ? lse_count : outputs[head_outputs + 1].GetTensorTypeAndShapeInfo().GetElementCount();
    if (returned_labels != label_count || returned_lse != lse_count) {
      throw EngineError(kErrRuntime, "the scoring head returned " + std::to_string(returned_labels) + " label logits and " +
                                         std::to_string(returned_lse) + " log-sum-exps for " + std::to_string(label_count) +
                                         " and " + std::to_string(lse_count));
    }
    const float* labels = nullptr;
    const float* lse = nullptr;
    std::vector<float> head;
    if (fixed_outputs) {
      // Both outputs in one copy from the fixed buffer (counted by the Device).
      const size_t lse_offset = AlignUp(label_count * sizeof(float));
      head.resize((lse_offset + lse_count * sizeof(float)) / sizeof(float));
      device_->CopyToHost(head.data(), head_buffer_.Data(), head.size() * sizeof(float));
      labels = head.data();
      lse = head.data() + lse_offset / sizeof(float);
    } else {
      labels = outputs[head_outputs].GetTensorData<float>();
      lse = outputs[head_outputs + 1].GetTensorData<float>();
      device_->CountDeviceToHost((label_count + lse_count) * sizeof(float));
    }
    if (want_logits) {
      result.label_logits.assign(labels, labels + wanted_labels);
      result.log_sum_exp.assign(lse, lse + wanted_positions);
    }
  } else {
    const Ort::Value& logits = outputs[head_outputs];
    const size_t elem = info_.logits_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? 4 : 2;
    device_->CountDeviceToHost(logits.GetTensorTypeAndShapeInfo().GetElementCount() * elem);
    if (want_logits) ReduceHostLogits(rows, logits, result);
  }
  return result;
}

void Decoder::ReduceHostLogits(const std::vector<ExtendRow>& rows, const Ort::Value& logits, ExtendResult& result) const {
  auto dims = logits.GetTensorTypeAndShapeInfo().GetShape();
  const int64_t positions_per_row = dims[1];
  const int64_t vocab = dims[2];
  if (vocab != info_.vocab_size) {
    throw EngineError(kErrRuntime, "logits have " + std::to_string(vocab) + " columns, expected " +
                                       std::to_string(info_.vocab_size));
  }
  result.label_logits.assign(result.label_begin.back(), 0.0f);
  result.log_sum_exp.assign(result.wanted_begin.back(), 0.0f);
  std::vector<float> row_logits(vocab);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& wanted = rows[r].logits_positions;
    for (size_t k = 0; k < wanted.size(); ++k) {
      // A gathered head returns the wanted positions in order; a stock one returns them all.
      const int64_t position = info_.has_logits_index ? static_cast<int64_t>(k) : wanted[k];
      const size_t offset = (r * positions_per_row + position) * vocab;
      if (info_.logits_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        std::memcpy(row_logits.data(), logits.GetTensorData<float>() + offset, vocab * sizeof(float));
      } else {
        const uint16_t* src = reinterpret_cast<const uint16_t*>(logits.GetTensorRawData()) + offset;
        for (int64_t v = 0; v < vocab; ++v) row_logits[v] = HalfToFloat(src[v]);
      }
      const size_t w = result.wanted_begin[r] + k;
      double max_logit = -INFINITY;
      for (int64_t v = 0; v < vocab; ++v) max_logit = std::max<double>(max_logit, row_logits[v]);
      double sum = 0.0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row_logits[v]) - max_logit);
      result.log_sum_exp[w] = static_cast<float>(max_logit + std::log(sum));
      const ExtendRow::Labels& labels = rows[r].labels[k];
      for (int j = 0; j < labels.count; ++j) result.label_logits[result.label_begin[w] + j] = row_logits[labels.ids[j]];
    }
  }
}

}  // namespace decide
