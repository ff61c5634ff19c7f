// A pass's integer inputs: the exact shape of a pass over its rows, and the values of input_ids,
// attention_mask, position_ids, decide_segment_ids, the wanted-position index
// (decide_token_index / decide_logits_index), decide_state_span and the scoring head's
// decide_label_index / decide_position_token_index, laid out as decoder.h's batch layout says
// (packed rows, split passes, padding) in the element types the graph declares (ModelInfo,
// graph_contract.h), and written into one host staging buffer. Copying that buffer to the device
// and binding the tensors is the Decoder's (decoder.cc: the device buffer is one of a pass's
// reused buffers).
// Thread: called from Decoder::Extend, on the libuv pool, one pass at a time (the Scorer's lock).
// Ownership: the rows' tokens, offsets, segments and labels are the caller's, read during the call
// only; the staging buffer is the Decoder's (pinned host memory on CUDA), and StagedInputs::host
// points into it until its next Reserve. ExactPassShape is pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "decoder.h"
#include "device/device.h"
#include "graph_contract.h"
#include "shape_buckets.h"

namespace decide {

// Each staged input starts at a multiple of this (CUDA kernels want aligned tensors); the
// Decoder's fixed output buffers align their tensors the same way.
constexpr size_t kInputAlignment = 256;

inline size_t AlignUp(size_t bytes) { return (bytes + kInputAlignment - 1) / kInputAlignment * kInputAlignment; }

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

// A pass's inputs as staged: in the order they are bound, at their offsets into [host, host + bytes).
struct StagedInputs {
  std::deque<StagedInput> inputs;
  const char* host = nullptr;
  size_t bytes = 0;
};

// The shape of a pass over `rows` as it stands (before any bucketing). `split_states`: passes
// without a past may run split into states and items (Decoder::SplitsStates).
PassShape ExactPassShape(const ModelInfo& info, bool split_states, const std::vector<ExtendRow>& rows, bool want_logits);

// Builds the integer inputs of a pass of `shape` over `rows` (padding rows included) and writes
// them into `staging`. (The past is not among them: Decoder::Extend binds it.)
StagedInputs StagePassInputs(const ModelInfo& info, const std::vector<ExtendRow>& rows, const PassShape& shape,
                             bool want_logits, HostStaging& staging);

}  // namespace decide
