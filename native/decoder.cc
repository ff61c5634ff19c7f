#include "decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "errors.h"
#include "ort_runtime.h"
#include "pass_inputs.h"
#include "session_options.h"

namespace decide {
namespace {

// At most this many CUDA graphs are captured (each holds its kernels' memory); later shapes run
// without one.
constexpr int kMaxCudaGraphs = 64;
// A fixed buffer that must grow takes this much headroom, so that slightly larger shapes later
// do not move it again (each move retires the CUDA graphs captured on it).
constexpr double kFixedBufferHeadroom = 1.25;

// A padding row of a bucketed pass: one token (id 0, position 0), no past, nothing read. One real
// token keeps its attention well defined (a row with every key masked could make NaN).
const int32_t kPaddingToken = 0;

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
  const ConfigHints hints{options.num_kv_heads, options.head_dim, options.vocab_size};
  info_ = ReadModelInfo(*session_, options.model_path, hints, &kv_names_);
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

void Decoder::BindInputs(const std::vector<ExtendRow>& rows, const PassShape& shape, bool want_logits,
                         Ort::IoBinding& binding) {
  const StagedInputs staged = StagePassInputs(info_, rows, shape, want_logits, *staging_);
  const size_t total = staged.bytes;
  if (inputs_.Bytes() < total) {
    inputs_ = DeviceBuffer(device_.get(), shape_buckets_ ? static_cast<size_t>(total * kFixedBufferHeadroom) : total);
    ++buffer_moves_;
  }
  device_->CopyFromHost(inputs_.Data(), staged.host, total);
  for (const StagedInput& input : staged.inputs) {
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
      binding.BindOutput(which == 0 ? kv_names_.present_keys[l].c_str() : kv_names_.present_values[l].c_str(), value);
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
  const PassShape exact = ExactPassShape(info_, SplitsStates(), real_rows, want_logits);
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
      binding.BindInput(which == 0 ? kv_names_.past_keys[l].c_str() : kv_names_.past_values[l].c_str(), past_values.back());
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
      binding.BindOutput(kv_names_.present_keys[l].c_str(), device_->MemoryInfo());
      binding.BindOutput(kv_names_.present_values[l].c_str(), device_->MemoryInfo());
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
