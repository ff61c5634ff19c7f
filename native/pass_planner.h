// How a stage's rows (already sorted for similar shapes) are cut into forward passes: an optimal
// contiguous split by dynamic programming over the end of the last pass. The cost of a pass, in
// token-equivalents of body compute, is
//   rows x S x (1 + attention_weight x (P + S)) + pass_overhead_tokens
// (S, P: its longest new run and longest past; padding included, since padding is computed, and
// rounded up to the pass's fixed shape when passes run in shape buckets), and
// a pass must fit the token, past-bytes, attention and logits budgets (the logits of a gathered
// head grow with the pass's wanted positions, which short rows make many of within a token budget). One pass when the rows are
// alike; several when merging long and short rows would compute more padding than a pass costs.
// Pure: no device, no session (tested on its own in native/test/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "decoder.h"

namespace decide {

struct PassLimits {
  int64_t token_budget = 0;       // rows x longest new run
  int64_t past_budget_bytes = 0;  // rows x longest past x kv_bytes_per_token
  int64_t attention_budget = 0;   // rows x S x (P + S)
  double kv_bytes_per_token = 0;
  double attention_weight = 0;
  double pass_overhead_tokens = 0;  // may be huge ("fewest passes"); capped to stay finite
  // The logits a pass makes, and their bound: a stock graph returns them for every new token
  // (bytes per token); a gathered head computes them for each wanted position over the whole
  // vocabulary before it reads its labels (bytes per position, the head's temporaries included).
  // 0: not counted that way.
  int64_t logits_bytes_per_token = 0;
  int64_t logits_bytes_per_position = 0;
  int64_t logits_budget_bytes = 0;
  // Passes run padded to fixed shapes (shape_buckets.h): rows, P and S are costed and bounded as
  // the pass will run them, padding included.
  bool shape_buckets = false;
  // The graph splits passes without a past into states and items (decoder.h, split passes): such a
  // pass runs the longest lead plus the longest items, with a gap between for shorter leads.
  bool split_states = false;
  // Passes run with past + new rounded up to this multiple (shape_buckets.h, AlignedLengths).
  int length_multiple = 1;
};

// [begin, end) row ranges, in order, covering every row. A single row always forms a pass,
// whatever the budgets say (it was validated to fit the context).
std::vector<std::pair<size_t, size_t>> PlanPasses(const std::vector<ExtendRow>& rows, const PassLimits& limits);

}  // namespace decide
