#include "pass_planner.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "shape_buckets.h"

namespace decide {

std::vector<std::pair<size_t, size_t>> PlanPasses(const std::vector<ExtendRow>& rows, const PassLimits& limits) {
  const size_t n = rows.size();
  std::vector<std::pair<size_t, size_t>> passes;
  if (n == 0) return passes;
  // "Infinite" overhead means fewest passes; keep it finite so that sums still compare.
  const double overhead = std::min(limits.pass_overhead_tokens, 1e12);
  std::vector<double> best(n + 1, 0.0);
  std::vector<size_t> cut(n + 1, 0);
  for (size_t end = 1; end <= n; ++end) {
    best[end] = -1.0;
    int64_t max_past = 0, max_new = 0;
    // The shortest non-empty past: below the pass's, the past is padded (AlignedLengths).
    int64_t min_past = INT64_MAX;
    SplitSpan span;
    int64_t positions = 0;
    for (size_t begin = end; begin-- > 0;) {
      const ExtendRow& row = rows[begin];
      positions += static_cast<int64_t>(row.logits_positions.size());
      max_past = std::max<int64_t>(max_past, row.past_len);
      if (row.past_len > 0) min_past = std::min<int64_t>(min_past, row.past_len);
      max_new = std::max<int64_t>(max_new, row.num_tokens);
      span.Add(row);
      // A split pass (ExactPassShape) runs its longest lead, then its longest items.
      const bool split = limits.split_states && max_past == 0 && span.Splits();
      const int64_t run_new = split ? span.NewLen() : max_new;
      const int64_t real_count = static_cast<int64_t>(end - begin);
      // What the pass computes: its rows and lengths as padded to the pass's shape.
      const int64_t count = limits.shape_buckets ? BucketUp(real_count) : real_count;
      int64_t pass_new = limits.shape_buckets ? BucketUp(run_new) : run_new;
      int64_t pass_past = limits.shape_buckets ? BucketUp(max_past) : max_past;
      std::tie(pass_past, pass_new) = AlignedLengths(pass_past, pass_new, limits.length_multiple, min_past < pass_past);
      bool fits = count * pass_new <= limits.token_budget &&
                  count * pass_past * limits.kv_bytes_per_token <= static_cast<double>(limits.past_budget_bytes) &&
                  count * pass_new * (pass_past + pass_new) <= limits.attention_budget;
      if (limits.logits_bytes_per_token > 0) {
        fits = fits && count * pass_new * limits.logits_bytes_per_token <= limits.logits_budget_bytes;
      }
      if (limits.logits_bytes_per_position > 0) {
        fits = fits && positions * limits.logits_bytes_per_position <= limits.logits_budget_bytes;
      }
      // A larger span that does not fit only grows as begin decreases.
      if (!fits && real_count > 1) break;
      const double pass_cost =
          static_cast<double>(count * pass_new) * (1.0 + limits.attention_weight * static_cast<double>(pass_past + pass_new)) +
          overhead;
      const double total = best[begin] + pass_cost;
      if (best[end] < 0 || total < best[end]) {
        best[end] = total;
        cut[end] = begin;
      }
    }
  }
  for (size_t end = n; end > 0; end = cut[end]) passes.emplace_back(cut[end], end);
  std::reverse(passes.begin(), passes.end());
  return passes;
}

}  // namespace decide
