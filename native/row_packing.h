// Multi-item packing (graphs with a decide_segment_ids input): how a group's questions are laid out
// in rows. A packed row holds, after its past, an optional lead of segment-0 tokens (the part of
// the state not yet computed, when the state's prefill and its questions share one pass) and then
// the questions, question k in segment k + 1 with positions restarting where the state ends. The
// graph's mask lets each question see the state and itself only, so every question gets the
// logits of its own fresh row while the state's KV is computed or copied once per row.
//
// The cut into rows depends on the group's own questions and prefix length only, never on the
// rest of the call or on what the prefix cache holds, so a question lands in the same row whatever
// else is scored with it.
#pragma once

#include <cstdint>
#include <vector>

#include "decoder.h"
#include "score_input.h"

namespace decide {

// A packed row may always hold this many question tokens, however short its state.
constexpr int64_t kMinPackedTokens = 64;

struct PackingLimits {
  int64_t token_budget = 0;      // new tokens of one row (the scorer's pass token budget)
  int64_t attention_budget = 0;  // new x (past + new) scores of one row
  // Stock graphs (no gathered LM head) return logits for every new token: bytes per token of them,
  // and the bound on a row's logits bytes. 0: no bound (a gathered head).
  int64_t logits_bytes_per_token = 0;
  int64_t logits_budget_bytes = 0;
};

// Whether a row of `new_tokens` new tokens after `past` past tokens fits the limits.
bool FitsPackedRow(const PackingLimits& limits, int64_t past, int64_t new_tokens);

// Per group, its suffixes (in input order) cut into packed rows: a row grows while its question
// tokens stay within max(state length, kMinPackedTokens) and the limits (with the whole state as
// past). The mask still computes the scores between a row's questions; the cap keeps them below
// the scores against the state that every question pays anyway.
std::vector<std::vector<std::vector<int>>> PackGroups(const ScoreInput& in, const PackingLimits& limits);

// One packed row's own arrays.
struct PackedRow {
  std::vector<int> suffixes;  // the questions, in the order of their logits positions
  int lead = 0;               // leading segment-0 tokens (the rest of the state), 0 for none
  std::vector<int32_t> tokens, offsets, segments, logits_positions;
  std::vector<ExtendRow::Labels> labels;  // per logits position: its question's label ids

  // The row for Decoder::Extend; points into this object, which must outlive the pass.
  ExtendRow AsExtendRow(const KvBlock* past, int past_len) const;
};

// Lays out `lead_count` state tokens at `lead`, then the suffixes.
PackedRow MakePackedRow(const ScoreInput& in, const int32_t* lead, int lead_count, const std::vector<int>& suffixes);

}  // namespace decide
