// Fixed pass shapes ("buckets") for CUDA graphs: a captured graph replays one shape at fixed
// addresses, so every pass is padded up to one of a few shapes and the same shape recurs call
// after call. Each dimension (rows, longest past, longest new run, wanted positions per row, label
// and position counts of the scoring head) is rounded up on its own to the series
// 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, ... (four steps per doubling): at most
// 25% padding per dimension (about 11% on average), so rows x tokens grows by at most 1.56x, while
// a replayed graph saves every kernel launch of the pass (thousands of nodes: tens of milliseconds
// on the card, more than the padding of any pass below ~10k tokens costs there). 0 stays 0: a pass
// without a past is its own bucket.
// Pure (tested in native/test/).
#pragma once

#include <cstdint>
#include <tuple>
#include <utility>

namespace decide {

// The smallest value of the series above that is >= n (n itself when n <= 4).
int64_t BucketUp(int64_t n);

// Everything that fixes the shapes of a pass's inputs and outputs.
struct PassShape {
  int rows = 0;
  int past_len = 0;     // P
  int new_len = 0;      // S
  int index_width = 0;  // wanted positions per row (decide_token_index [rows, index_width])
  // A pass that reads no logits on a head with a flat token index gathers one dummy token in all
  // (decide_token_index [1, 1]), not one per row: the head computes a whole vocabulary per entry.
  bool one_dummy_index = false;
  int64_t labels = 0;     // decide_label_index [labels]
  int64_t positions = 0;  // decide_position_token_index [positions]
  // Graphs with decide_state_span: the state part's length Ls of a split pass (its rows' state
  // tokens at [0, Ls), their items from Ls on); 0: no split. Never set in a bucketed pass.
  int state_len = 0;

  auto Key() const { return std::make_tuple(rows, past_len, new_len, index_width, labels, positions, state_len, one_dummy_index); }
  // decide_token_index's rows.
  int IndexRows() const { return one_dummy_index ? 1 : rows; }
  bool operator<(const PassShape& other) const { return Key() < other.Key(); }
  bool operator==(const PassShape& other) const { return Key() == other.Key(); }
};

// `exact` with every dimension rounded up by BucketUp.
PassShape BucketPassShape(const PassShape& exact);

// A pass's total length (past + new tokens) rounded up to a multiple of `multiple` (1: as is):
// attention kernels take the mask's rows only when their stride is aligned (ONNX Runtime's CUDA
// memory-efficient attention wants a multiple of 4 elements with a mask, and falls back to an
// unfused kernel otherwise). The padding goes to the past (masked columns, no compute beyond
// attention) when the past is padded already (`past_padded`: a row's past is shorter than the
// pass's), else to the new tokens: a row whose past fills the pass's forks each layer's keys or
// values as one copy, and padding after it would split that copy into one per head (on an H100,
// forked tickets spent 895 ms of host time a call in CUDA's batched copy so, against 140 ms).
// Returns {past, new}.
std::pair<int64_t, int64_t> AlignedLengths(int64_t past_len, int64_t new_len, int multiple, bool past_padded);

// `shape` with AlignedLengths applied. A split pass (state_len > 0) has no past: its padding goes
// after its items, and its state part keeps its length.
PassShape AlignPassLength(const PassShape& shape, int multiple, bool past_padded);

}  // namespace decide
