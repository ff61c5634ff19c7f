#include "row_packing.h"

#include <algorithm>

namespace decide {

bool FitsPackedRow(const PackingLimits& limits, int64_t past, int64_t new_tokens) {
  bool ok = new_tokens <= limits.token_budget && new_tokens * (past + new_tokens) <= limits.attention_budget;
  if (limits.logits_bytes_per_token > 0) ok = ok && new_tokens * limits.logits_bytes_per_token <= limits.logits_budget_bytes;
  return ok;
}

std::vector<std::vector<std::vector<int>>> PackGroups(const ScoreInput& in, const PackingLimits& limits) {
  auto suffix_len = [&](int s) { return in.suffix_offsets[s + 1] - in.suffix_offsets[s]; };
  std::vector<std::vector<int>> by_group(in.num_groups);
  for (int s = 0; s < in.num_suffixes; ++s) by_group[in.suffix_group[s]].push_back(s);

  std::vector<std::vector<std::vector<int>>> rows(in.num_groups);
  for (int g = 0; g < in.num_groups; ++g) {
    const int64_t state = in.prefix_offsets[g + 1] - in.prefix_offsets[g];
    const int64_t cap = std::max<int64_t>(state, kMinPackedTokens);
    std::vector<int> row;
    int64_t tokens = 0;
    for (int s : by_group[g]) {
      const int64_t next = tokens + suffix_len(s);
      if (!row.empty() && (next > cap || !FitsPackedRow(limits, state, next))) {
        rows[g].push_back(std::move(row));
        row.clear();
        tokens = 0;
      }
      row.push_back(s);
      tokens += suffix_len(s);
    }
    if (!row.empty()) rows[g].push_back(std::move(row));
  }
  return rows;
}

PackedRow MakePackedRow(const ScoreInput& in, const int32_t* lead, int lead_count, const std::vector<int>& suffixes) {
  PackedRow row;
  row.suffixes = suffixes;
  row.lead = lead_count;
  for (int i = 0; i < lead_count; ++i) {
    row.tokens.push_back(lead[i]);
    row.offsets.push_back(i);
    row.segments.push_back(0);
  }
  for (size_t k = 0; k < suffixes.size(); ++k) {
    const int s = suffixes[k];
    const int32_t* ids = in.suffix_tokens + in.suffix_offsets[s];
    const int count = in.suffix_offsets[s + 1] - in.suffix_offsets[s];
    for (int i = 0; i < count; ++i) {
      row.tokens.push_back(ids[i]);
      // Each question starts where the state ends, as in its own fresh row.
      row.offsets.push_back(lead_count + i);
      row.segments.push_back(static_cast<int32_t>(k + 1));
    }
    row.logits_positions.push_back(static_cast<int32_t>(row.tokens.size() - 1));
    row.labels.push_back(ExtendRow::Labels{in.label_ids + in.label_offsets[s], in.label_offsets[s + 1] - in.label_offsets[s]});
  }
  return row;
}

ExtendRow PackedRow::AsExtendRow(const KvBlock* past, int past_len) const {
  ExtendRow row;
  row.past = past;
  row.past_len = past_len;
  row.tokens = tokens.data();
  row.num_tokens = static_cast<int>(tokens.size());
  row.offsets = offsets.data();
  row.segments = segments.data();
  row.logits_positions = logits_positions;
  row.labels = labels;
  row.lead = lead;
  return row;
}

}  // namespace decide
