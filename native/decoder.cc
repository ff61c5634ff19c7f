#include "decoder.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <thread>

#include "errors.h"
#include "ort_runtime.h"
#include "session_options.h"

namespace decide {
namespace {

constexpr const char* kLogitsIndexInput = "decide_logits_index";
constexpr const char* kSegmentIdsInput = "decide_segment_ids";
// Below this many bytes a fork is copied on the calling thread (a thread start costs more).
constexpr size_t kParallelForkBytes = size_t{8} << 20;

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

// Host-side integer input that keeps its storage alive while bound.
struct IntInput {
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  Ort::Value value{nullptr};

  void Bind(const OrtMemoryInfo* host, ONNXTensorElementDataType type, const std::vector<int64_t>& shape) {
    if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      i32.assign(i64.begin(), i64.end());
      value = Ort::Value::CreateTensor<int32_t>(host, i32.data(), i32.size(), shape.data(), shape.size());
    } else {
      value = Ort::Value::CreateTensor<int64_t>(host, i64.data(), i64.size(), shape.data(), shape.size());
    }
  }
};

}  // namespace

Decoder::Decoder(const DecoderOptions& options) {
  Ort::SessionOptions session_options =
      MakeSessionOptions(options.provider, options.intra_op_threads, options.device_id);
  if (!options.profile_prefix.empty()) session_options.EnableProfiling(options.profile_prefix.c_str());

  try {
    session_ = std::make_unique<Ort::Session>(OrtEnvironment(), options.model_path.c_str(), session_options);
  } catch (const Ort::Exception& e) {
    throw EngineError(kErrModelLoad, options.model_path + ": " + e.what());
  }
  host_info_ = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  ReadModelInfo(options);
  fork_threads_ = std::max(1, options.intra_op_threads);
  device_ = options.provider == "cuda" ? MakeCudaDevice(*session_, options.device_id) : MakeCpuDevice();
}

Decoder::~Decoder() = default;

void Decoder::ReadModelInfo(const DecoderOptions& options) {
  Ort::AllocatorWithDefaultOptions allocator;
  const std::string& path = options.model_path;
  auto fail = [&](const std::string& why) { throw EngineError(kErrModelLoad, path + ": " + why); };

  std::regex past_re(R"(past_key_values\.(\d+)\.(key|value))");
  std::regex present_re(R"(present\.(\d+)\.(key|value))");
  std::vector<std::string> past_keys, past_values, present_keys, present_values;
  bool has_ids = false, has_mask = false;
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
    } else if (name == kSegmentIdsInput) {
      info_.has_segment_ids = true;
      if (!IsIntegerType(type)) fail("decide_segment_ids must be int64 or int32");
      info_.segments_type = type;
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

  bool has_logits = false;
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
    } else if (std::regex_match(name, m, present_re)) {
      put(m[2] == "key" ? present_keys : present_values, std::stoul(m[1].str()), name);
    }
  }
  if (!has_logits) fail("the graph has no 'logits' output");

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
  ElemSize(info_.logits_type);
  if (info_.kv.num_kv_heads <= 0 || info_.kv.head_dim <= 0) {
    fail("cannot tell num_key_value_heads / head_dim from the graph or config.json");
  }
  if (info_.vocab_size <= 0) info_.vocab_size = options.vocab_size;
  if (info_.vocab_size <= 0) fail("cannot tell the vocabulary size from the graph or config.json");
}

ExtendResult Decoder::Extend(const std::vector<ExtendRow>& rows, bool want_logits) {
  const KvShape& kv = info_.kv;
  const int batch = static_cast<int>(rows.size());
  int past_len = 0, new_len = 0, logits_per_row = 0;
  for (const ExtendRow& row : rows) {
    past_len = std::max(past_len, row.past_len);
    new_len = std::max(new_len, row.num_tokens);
    logits_per_row = std::max(logits_per_row, static_cast<int>(row.logits_positions.size()));
    if (row.segments != nullptr && !info_.has_segment_ids) {
      throw EngineError(kErrRuntime, "a packed row needs a graph with decide_segment_ids");
    }
  }
  if (!want_logits) logits_per_row = 0;
  const int total_len = past_len + new_len;
  // The index input needs at least one position per row, even when no logits are read.
  const int index_width = std::max(logits_per_row, 1);

  IntInput ids, mask, positions, segments, logits_index;
  ids.i64.assign(static_cast<size_t>(batch) * new_len, 0);
  mask.i64.assign(static_cast<size_t>(batch) * total_len, 0);
  positions.i64.assign(static_cast<size_t>(batch) * new_len, 0);
  segments.i64.assign(info_.has_segment_ids ? static_cast<size_t>(batch) * total_len : 0, 0);
  logits_index.i64.assign(static_cast<size_t>(batch) * index_width, 0);
  for (int r = 0; r < batch; ++r) {
    const ExtendRow& row = rows[r];
    for (int i = 0; i < row.num_tokens; ++i) {
      ids.i64[static_cast<size_t>(r) * new_len + i] = row.tokens[i];
      positions.i64[static_cast<size_t>(r) * new_len + i] = row.past_len + (row.offsets ? row.offsets[i] : i);
    }
    int64_t* mask_row = mask.i64.data() + static_cast<size_t>(r) * total_len;
    std::fill(mask_row, mask_row + row.past_len, 1);
    std::fill(mask_row + past_len, mask_row + past_len + row.num_tokens, 1);
    if (info_.has_segment_ids && row.segments != nullptr) {
      // The past and the padding stay segment 0; padding is masked anyway.
      int64_t* segment_row = segments.i64.data() + static_cast<size_t>(r) * total_len + past_len;
      for (int i = 0; i < row.num_tokens; ++i) segment_row[i] = row.segments[i];
    }
    // Rows with fewer wanted positions repeat their last one (or read position 0): any valid index.
    for (int k = 0; k < index_width; ++k) {
      const auto& wanted = row.logits_positions;
      logits_index.i64[static_cast<size_t>(r) * index_width + k] =
          wanted.empty() ? 0 : wanted[std::min<size_t>(k, wanted.size() - 1)];
    }
  }
  const OrtMemoryInfo* host = host_info_;
  ids.Bind(host, info_.ids_type, {batch, new_len});
  mask.Bind(host, info_.mask_type, {batch, total_len});
  positions.Bind(host, info_.positions_type, {batch, new_len});
  if (info_.has_segment_ids) segments.Bind(host, info_.segments_type, {batch, total_len});
  logits_index.Bind(host, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {batch, index_width});

  // Past: each row's prefix KV forked into the batch tensor, padding zero-filled.
  const size_t run_bytes = static_cast<size_t>(past_len) * kv.head_dim * kv.elem_size;
  const size_t layer_bytes = static_cast<size_t>(batch) * kv.num_kv_heads * run_bytes;
  static char empty_past[64];  // ORT wants a non-null pointer even for a zero-sized tensor
  // The batch past tensors live in buffers kept across calls: a fresh allocation of this size is
  // page-faulted on every call (measured ~0.3 s/GiB here), a reused one is not.
  if (past_pool_.size() != static_cast<size_t>(2 * kv.num_layers)) past_pool_.resize(2 * kv.num_layers);
  for (int b = 0; b < 2 * kv.num_layers; ++b) {
    if (past_pool_[b].Bytes() < layer_bytes) past_pool_[b] = DeviceBuffer(device_.get(), layer_bytes);
  }
  if (layer_bytes > 0) ForkPast(rows, past_len);
  std::vector<Ort::Value> past_values;
  const std::vector<int64_t> past_shape = {batch, kv.num_kv_heads, past_len, kv.head_dim};
  for (int b = 0; b < 2 * kv.num_layers; ++b) {
    // A zero-sized past still needs a non-null pointer; it is bound as a host tensor.
    void* data = layer_bytes > 0 ? static_cast<void*>(past_pool_[b].Data()) : static_cast<void*>(empty_past);
    const OrtMemoryInfo* info = layer_bytes > 0 ? device_->MemoryInfo() : host;
    past_values.push_back(Ort::Value::CreateTensor(info, data, layer_bytes, past_shape.data(), past_shape.size(),
                                                   info_.kv_type));
  }

  Ort::IoBinding binding(*session_);
  binding.BindInput("input_ids", ids.value);
  binding.BindInput("attention_mask", mask.value);
  if (info_.has_position_ids) binding.BindInput("position_ids", positions.value);
  if (info_.has_logits_index) binding.BindInput(kLogitsIndexInput, logits_index.value);
  if (info_.has_segment_ids) binding.BindInput(kSegmentIdsInput, segments.value);
  bool use_cache_branch = true;
  int64_t one = 1;
  Ort::Value cache_branch{nullptr};
  if (info_.has_use_cache_branch) {
    cache_branch = Ort::Value::CreateTensor<bool>(host, &use_cache_branch, 1, &one, 1);
    binding.BindInput("use_cache_branch", cache_branch);
  }
  for (int l = 0; l < kv.num_layers; ++l) {
    binding.BindInput(past_key_names_[l].c_str(), past_values[2 * l]);
    binding.BindInput(past_value_names_[l].c_str(), past_values[2 * l + 1]);
  }
  for (int l = 0; l < kv.num_layers; ++l) {
    binding.BindOutput(present_key_names_[l].c_str(), device_->MemoryInfo());
    binding.BindOutput(present_value_names_[l].c_str(), device_->MemoryInfo());
  }
  // The logits stay bound even when unused: an unbound graph output is an error in ORT.
  binding.BindOutput("logits", host);

  try {
    session_->Run(Ort::RunOptions{nullptr}, binding);
    binding.SynchronizeOutputs();
  } catch (const Ort::Exception& e) {
    std::string what = e.what();
    if (what.find("alloc") != std::string::npos || what.find("memory") != std::string::npos) {
      throw EngineError(kErrOutOfMemory, "forward pass ran out of memory: " + what);
    }
    throw EngineError(kErrRuntime, "forward pass failed: " + what);
  }

  std::vector<Ort::Value> outputs = binding.GetOutputValues();
  ExtendResult result;
  result.batch = batch;
  result.past_len = past_len;
  result.new_len = new_len;
  for (int l = 0; l < kv.num_layers; ++l) {
    result.present_keys.push_back(std::move(outputs[2 * l]));
    result.present_values.push_back(std::move(outputs[2 * l + 1]));
  }
  result.logits_per_row = logits_per_row;
  if (logits_per_row > 0) {
    Ort::Value& logits = outputs[2 * kv.num_layers];
    auto dims = logits.GetTensorTypeAndShapeInfo().GetShape();
    const int64_t positions_per_row = dims[1];
    const int64_t vocab = dims[2];
    if (vocab != info_.vocab_size) {
      throw EngineError(kErrRuntime, "logits have " + std::to_string(vocab) + " columns, expected " +
                                         std::to_string(info_.vocab_size));
    }
    result.logits.assign(static_cast<size_t>(batch) * logits_per_row * vocab, 0.0f);
    for (int r = 0; r < batch; ++r) {
      const auto& wanted = rows[r].logits_positions;
      for (size_t k = 0; k < wanted.size(); ++k) {
        // A gathered head returns the wanted positions in order; a stock one returns them all.
        int64_t position = info_.has_logits_index ? static_cast<int64_t>(k) : wanted[k];
        size_t offset = (static_cast<size_t>(r) * positions_per_row + position) * vocab;
        float* dst = result.logits.data() + (static_cast<size_t>(r) * logits_per_row + k) * vocab;
        if (info_.logits_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
          std::memcpy(dst, logits.GetTensorData<float>() + offset, vocab * sizeof(float));
        } else {
          const uint16_t* src = reinterpret_cast<const uint16_t*>(logits.GetTensorRawData()) + offset;
          for (int64_t v = 0; v < vocab; ++v) dst[v] = HalfToFloat(src[v]);
        }
      }
    }
  }
  return result;
}

void Decoder::ForkPast(const std::vector<ExtendRow>& rows, int past_len) {
  const KvShape& kv = info_.kv;
  const int batch = static_cast<int>(rows.size());
  const size_t token_bytes = static_cast<size_t>(kv.head_dim) * kv.elem_size;
  const size_t run_bytes = static_cast<size_t>(past_len) * token_bytes;
  // One past buffer (a layer's keys or values): each row's runs copied, and only the padding after
  // them zeroed (stale KV or fresh memory there could hold NaN, which the mask would not absorb).
  // Zeroing the whole buffer first wrote every forked byte twice.
  auto fork_buffer = [&](int b) {
    const int layer = b / 2;
    char* base = past_pool_[b].Data();
    for (int r = 0; r < batch; ++r) {
      const ExtendRow& row = rows[r];
      char* dst = base + static_cast<size_t>(r) * kv.num_kv_heads * run_bytes;
      const size_t copied = static_cast<size_t>(row.past_len) * token_bytes;
      if (row.past_len > 0) {
        const DeviceBuffer& src = b % 2 == 0 ? row.past->keys[layer] : row.past->values[layer];
        device_->Copy2D(dst, run_bytes, src.Data(), row.past->RunBytes(row.past->length), copied, kv.num_kv_heads);
      }
      if (copied == run_bytes) continue;
      if (copied == 0) {
        device_->Zero(dst, static_cast<size_t>(kv.num_kv_heads) * run_bytes);
      } else {
        for (int h = 0; h < kv.num_kv_heads; ++h) device_->Zero(dst + h * run_bytes + copied, run_bytes - copied);
      }
    }
  };
  const int buffers = 2 * kv.num_layers;
  // On the CPU the fork is memory-bound work that ORT's threads are idle for: split the buffers
  // over the session's threads (the document workload forks ~0.5 GB per call; one thread left
  // the second core idle for it). A device copy is queued on its stream and stays serial.
  const size_t total_bytes = static_cast<size_t>(buffers) * batch * kv.num_kv_heads * run_bytes;
  const int workers = device_->IsHost() && total_bytes >= kParallelForkBytes ? std::min(fork_threads_, buffers) : 1;
  if (workers <= 1) {
    for (int b = 0; b < buffers; ++b) fork_buffer(b);
    return;
  }
  std::vector<std::thread> helpers;
  for (int w = 1; w < workers; ++w) {
    helpers.emplace_back([&, w] {
      for (int b = w; b < buffers; b += workers) fork_buffer(b);
    });
  }
  for (int b = 0; b < buffers; b += workers) fork_buffer(b);
  for (std::thread& t : helpers) t.join();
}

void Decoder::CopyNewKv(const ExtendResult& result, int row, int count, KvBlock& dst, int dst_start) {
  const KvShape& kv = info_.kv;
  const size_t token_bytes = static_cast<size_t>(kv.head_dim) * kv.elem_size;
  const size_t total_len = static_cast<size_t>(result.past_len) + result.new_len;
  for (int l = 0; l < kv.num_layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      const Ort::Value& present = which == 0 ? result.present_keys[l] : result.present_values[l];
      const char* base = static_cast<const char*>(present.GetTensorRawData());
      const char* src = base + (static_cast<size_t>(row) * kv.num_kv_heads * total_len + result.past_len) * token_bytes;
      DeviceBuffer& dst_layer = which == 0 ? dst.keys[l] : dst.values[l];
      char* out = dst_layer.Data() + static_cast<size_t>(dst_start) * token_bytes;
      device_->Copy2D(out, dst.RunBytes(dst.length), src, total_len * token_bytes, count * token_bytes, kv.num_kv_heads);
    }
  }
}

void Decoder::CopyKvPrefix(const KvBlock& src, int count, KvBlock& dst) {
  const KvShape& kv = info_.kv;
  for (int l = 0; l < kv.num_layers; ++l) {
    device_->Copy2D(dst.keys[l].Data(), dst.RunBytes(dst.length), src.keys[l].Data(), src.RunBytes(src.length),
                    src.RunBytes(count), kv.num_kv_heads);
    device_->Copy2D(dst.values[l].Data(), dst.RunBytes(dst.length), src.values[l].Data(), src.RunBytes(src.length),
                    src.RunBytes(count), kv.num_kv_heads);
  }
}

}  // namespace decide
