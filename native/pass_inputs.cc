#include "pass_inputs.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace decide {

PassShape ExactPassShape(const ModelInfo& info, bool split_states, const std::vector<ExtendRow>& rows, bool want_logits) {
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
  shape.one_dummy_index = !want_logits && info.flat_token_index;
  // Split only where the head gathers the wanted positions (a stock graph's logits come back for
  // every slot, read in place by Decoder::ReduceHostLogits).
  if (split_states && shape.past_len == 0) {
    SplitSpan span;
    for (const ExtendRow& row : rows) span.Add(row);
    if (span.Splits()) {
      shape.state_len = span.lead;
      shape.new_len = span.NewLen();
    }
  }
  if (info.has_label_head) {
    shape.labels = std::max<int64_t>(labels, 1);
    shape.positions = std::max<int64_t>(positions, 1);
  }
  return shape;
}

StagedInputs StagePassInputs(const ModelInfo& info, const std::vector<ExtendRow>& rows, const PassShape& shape,
                             bool want_logits, HostStaging& staging) {
  const int batch = shape.rows;
  const int past_len = shape.past_len, new_len = shape.new_len;
  const int total_len = past_len + new_len;
  const int index_width = shape.index_width;

  StagedInputs staged;
  std::deque<StagedInput>& inputs = staged.inputs;  // a deque: add() hands out references that later adds keep valid
  auto add = [&](const char* name, ONNXTensorElementDataType type, std::vector<int64_t> shape) -> std::vector<int64_t>& {
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    inputs.push_back(StagedInput{name, type, std::move(shape), std::vector<int64_t>(count, 0)});
    return inputs.back().values;
  };
  auto& ids = add("input_ids", info.ids_type, {batch, new_len});
  auto& mask = add("attention_mask", info.mask_type, {batch, total_len});
  std::vector<int64_t>* positions = info.has_position_ids ? &add("position_ids", info.positions_type, {batch, new_len}) : nullptr;
  std::vector<int64_t>* segments = info.has_segment_ids ? &add(kSegmentIdsInput, info.segments_type, {batch, total_len}) : nullptr;
  std::vector<int64_t>* logits_index =
      info.has_logits_index
          ? &add(info.flat_token_index ? kTokenIndexInput : kLogitsIndexInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.IndexRows(), index_width})
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
      const int64_t row_start = info.flat_token_index ? static_cast<int64_t>(r) * new_len : 0;
      for (int k = 0; k < index_width; ++k) {
        (*logits_index)[static_cast<size_t>(r) * index_width + k] =
            row_start + (wanted.empty() ? 0 : slot(wanted[std::min<size_t>(k, wanted.size() - 1)]));
      }
    }
  }
  if (info.has_state_span) add(kStateSpanInput, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, {shape.state_len});
  if (info.has_label_head) {
    // Flat indices, in the result's order: per wanted label (row * K + k) * vocab + token in the
    // head's [rows, K, vocab] logits; per wanted position (row, k) the same index of its first
    // label (any token's logit minus its log-softmax is the log-sum-exp; a label's keeps both
    // terms moderate), token 0 for a position without labels; then dummy entries (0: row 0,
    // position 0, token 0) up to the pass shape's counts.
    std::vector<int64_t> label_index, position_index;
    const int64_t vocab = info.vocab_size;
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
  char* host = staging.Reserve(total);
  for (const StagedInput& input : inputs) {
    if (input.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      auto* out = reinterpret_cast<int32_t*>(host + input.offset);
      for (size_t i = 0; i < input.values.size(); ++i) out[i] = static_cast<int32_t>(input.values[i]);
    } else {
      std::memcpy(host + input.offset, input.values.data(), input.values.size() * 8);
    }
  }
  staged.host = host;
  staged.bytes = total;
  return staged;
}

}  // namespace decide
