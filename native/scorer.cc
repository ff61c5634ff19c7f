#include "scorer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "errors.h"

namespace decide {
namespace {

// Stock graphs (no decide_logits_index) return logits for every position; cap that tensor.
constexpr int64_t kStockLogitsBudgetBytes = int64_t{512} << 20;
// A packed suffix row may always hold this many new tokens, however short its past.
constexpr int64_t kMinPackedTokens = 64;

uint64_t HashIds(const int32_t* ids, int count) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < count; ++i) {
    h ^= static_cast<uint32_t>(ids[i]);
    h *= 1099511628211ull;
  }
  return h;
}

void Add(ScoreCounters& into, const ScoreCounters& from) {
  into.calls += from.calls;
  into.prefix_tokens_computed += from.prefix_tokens_computed;
  into.cached_tokens += from.cached_tokens;
  into.suffix_tokens += from.suffix_tokens;
  into.forward_passes += from.forward_passes;
  into.prefix_passes += from.prefix_passes;
  into.suffix_passes += from.suffix_passes;
  into.padded_tokens += from.padded_tokens;
  into.prefix_cache_evictions += from.prefix_cache_evictions;
  into.past_tokens_copied += from.past_tokens_copied;
}

}  // namespace

Scorer::Scorer(const ScorerOptions& options)
    : options_(options),
      decoder_(std::make_unique<Decoder>(options.decoder)),
      cache_(options.prefix_cache_bytes) {}

Scorer::~Scorer() {
  // Blocks hold Device memory: free them while the Decoder (and its Device) still exists.
  cache_.Clear();
}

ScoreCounters Scorer::Counters() {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

size_t Scorer::CacheBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.Bytes();
}

size_t Scorer::CacheEntries() {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.Entries();
}

void Scorer::ClearCache() {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.Clear();
}

void Scorer::Validate(const ScoreInput& in) const {
  auto fail = [](const std::string& why) { throw EngineError(kErrInput, why); };
  const int64_t vocab = decoder_->Info().vocab_size;
  auto check_offsets = [&](const int32_t* offsets, int count, size_t length, const char* what) {
    if (offsets[0] != 0) fail(std::string(what) + " offsets must start at 0");
    for (int i = 0; i < count; ++i) {
      if (offsets[i + 1] < offsets[i]) fail(std::string(what) + " offsets must not decrease");
    }
    if (static_cast<size_t>(offsets[count]) != length) {
      fail(std::string(what) + " offsets must end at the length of the token array");
    }
  };
  auto check_ids = [&](const int32_t* ids, size_t length, const char* what) {
    for (size_t i = 0; i < length; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        fail(std::string(what) + " id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
             std::to_string(vocab) + ")");
      }
    }
  };
  if (in.num_groups < 0 || in.num_suffixes < 0) fail("negative counts");
  check_offsets(in.prefix_offsets, in.num_groups, in.prefix_tokens_length, "prefix");
  check_offsets(in.suffix_offsets, in.num_suffixes, in.suffix_tokens_length, "suffix");
  check_offsets(in.label_offsets, in.num_suffixes, in.label_ids_length, "label");
  check_ids(in.prefix_tokens, in.prefix_tokens_length, "token");
  check_ids(in.suffix_tokens, in.suffix_tokens_length, "token");
  check_ids(in.label_ids, in.label_ids_length, "label");
  for (int g = 0; g < in.num_groups; ++g) {
    if (in.prefix_offsets[g + 1] == in.prefix_offsets[g]) fail("group " + std::to_string(g) + " has an empty prefix");
  }
  for (int s = 0; s < in.num_suffixes; ++s) {
    int group = in.suffix_group[s];
    if (group < 0 || group >= in.num_groups) fail("suffix " + std::to_string(s) + " names no group");
    int suffix_len = in.suffix_offsets[s + 1] - in.suffix_offsets[s];
    if (suffix_len == 0) fail("suffix " + std::to_string(s) + " is empty");
    if (in.label_offsets[s + 1] == in.label_offsets[s]) fail("suffix " + std::to_string(s) + " has no labels");
    int total = in.prefix_offsets[group + 1] - in.prefix_offsets[group] + suffix_len;
    if (options_.max_context > 0 && total > options_.max_context) {
      fail("sequence of " + std::to_string(total) + " tokens (prefix + suffix " + std::to_string(s) +
           ") exceeds the model's context of " + std::to_string(options_.max_context));
    }
  }
}

ScoreOutput Scorer::Score(const ScoreInput& input) {
  std::lock_guard<std::mutex> lock(mu_);
  Validate(input);
  ScoreOutput output;
  output.counters.calls = 1;
  std::vector<GroupPast> pasts = ResolvePrefixes(input, output);
  RunSuffixes(input, pasts, output);
  Add(totals_, output.counters);
  return output;
}

std::vector<Scorer::GroupPast> Scorer::ResolvePrefixes(const ScoreInput& in, ScoreOutput& output) {
  const KvShape& shape = decoder_->Info().kv;
  ScoreCounters& counters = output.counters;
  output.cached_tokens.assign(in.num_groups, 0);
  std::vector<GroupPast> pasts(in.num_groups);
  struct Pending {
    int group;
    PrefixCache::Match match;
  };
  std::vector<Pending> pending;
  std::vector<int> same_as(in.num_groups, -1);  // groups whose prefix equals an earlier group's
  std::unordered_map<uint64_t, std::vector<int>> seen;

  for (int g = 0; g < in.num_groups; ++g) {
    const int32_t* ids = in.prefix_tokens + in.prefix_offsets[g];
    int count = in.prefix_offsets[g + 1] - in.prefix_offsets[g];
    auto& candidates = seen[HashIds(ids, count)];
    for (int other : candidates) {
      const int32_t* other_ids = in.prefix_tokens + in.prefix_offsets[other];
      if (in.prefix_offsets[other + 1] - in.prefix_offsets[other] == count &&
          std::equal(ids, ids + count, other_ids)) {
        same_as[g] = other;
        break;
      }
    }
    if (same_as[g] >= 0) {
      counters.cached_tokens += count;
      output.cached_tokens[g] = count;
      continue;
    }
    candidates.push_back(g);
    PrefixCache::Match match = cache_.Lookup(ids, count);
    counters.cached_tokens += match.length;
    output.cached_tokens[g] = match.length;
    if (match.length == count) {
      pasts[g] = GroupPast{match.block, count};
    } else {
      counters.prefix_tokens_computed += count - match.length;
      pending.push_back(Pending{g, match});
    }
  }

  // Rows sorted by the tokens they compute (then by past), so that Chunk() can cut the list into
  // passes with little padding.
  std::sort(pending.begin(), pending.end(), [&](const Pending& a, const Pending& b) {
    int na = in.prefix_offsets[a.group + 1] - in.prefix_offsets[a.group] - a.match.length;
    int nb = in.prefix_offsets[b.group + 1] - in.prefix_offsets[b.group] - b.match.length;
    if (na != nb) return na < nb;
    return a.match.length < b.match.length;
  });
  std::vector<ExtendRow> rows;
  for (const Pending& p : pending) {
    ExtendRow row;
    row.past = p.match.block.get();
    row.past_len = p.match.length;
    row.tokens = in.prefix_tokens + in.prefix_offsets[p.group] + p.match.length;
    row.num_tokens = in.prefix_offsets[p.group + 1] - in.prefix_offsets[p.group] - p.match.length;
    rows.push_back(row);
  }
  for (auto [begin, end] : Chunk(rows, false)) {
    std::vector<ExtendRow> chunk(rows.begin() + begin, rows.begin() + end);
    ExtendResult result = decoder_->Extend(chunk, false);
    Account(rows, begin, end, counters);
    counters.prefix_passes += 1;
    for (size_t i = begin; i < end; ++i) {
      const Pending& p = pending[i];
      const int32_t* ids = in.prefix_tokens + in.prefix_offsets[p.group];
      int count = in.prefix_offsets[p.group + 1] - in.prefix_offsets[p.group];
      auto block = std::make_shared<KvBlock>(decoder_->GetDevice(), shape, count);
      if (p.match.length > 0) decoder_->CopyKvPrefix(*p.match.block, p.match.length, *block);
      decoder_->CopyNewKv(result, static_cast<int>(i - begin), rows[i].num_tokens, *block, p.match.length);
      counters.prefix_cache_evictions += cache_.Insert(ids, count, block);
      pasts[p.group] = GroupPast{std::move(block), count};
    }
  }
  for (int g = 0; g < in.num_groups; ++g) {
    if (same_as[g] >= 0) pasts[g] = pasts[same_as[g]];
  }
  return pasts;
}

bool Scorer::PacksSuffixes() const {
  const ModelInfo& info = decoder_->Info();
  // A gathered LM head must return several positions per row; a rewrite cached by an older
  // engine returns one, and such a graph is run unpacked.
  return options_.pack_suffixes && info.has_segment_ids && (!info.has_logits_index || info.logits_index_rank == 2);
}

Scorer::SuffixRows Scorer::PlanSuffixRows(const ScoreInput& in, const std::vector<GroupPast>& pasts) const {
  auto suffix_len = [&](int s) { return in.suffix_offsets[s + 1] - in.suffix_offsets[s]; };
  SuffixRows plan;
  if (!PacksSuffixes()) {
    // One row per suffix, its group's past forked in as the row's past.
    for (int s = 0; s < in.num_suffixes; ++s) plan.suffixes.push_back({s});
  } else {
    // One row per group, holding its suffixes one after another. A row stops growing when its new
    // tokens would exceed the past's length (at least kMinPackedTokens): the block-diagonal mask
    // computes the scores between items too, and this keeps them below the scores against the
    // state that every item pays anyway. Groups with equal prefixes get a row each, so a row
    // depends on its group's own suffixes only, never on the rest of the call.
    const ModelInfo& info = decoder_->Info();
    std::vector<std::vector<int>> by_group(in.num_groups);
    for (int s = 0; s < in.num_suffixes; ++s) by_group[in.suffix_group[s]].push_back(s);
    for (int g = 0; g < in.num_groups; ++g) {
      if (by_group[g].empty()) continue;
      const int64_t past = pasts[g].length;
      const int64_t limit = std::max<int64_t>(past, kMinPackedTokens);
      auto fits = [&](int64_t tokens) {
        bool ok = tokens <= limit && tokens <= options_.token_budget &&
                  tokens * (past + tokens) <= options_.attention_budget;
        if (!info.has_logits_index) ok = ok && tokens * info.vocab_size * 4 <= kStockLogitsBudgetBytes;
        return ok;
      };
      std::vector<int> row;
      int64_t tokens = 0;
      for (int s : by_group[g]) {
        if (!row.empty() && !fits(tokens + suffix_len(s))) {
          plan.suffixes.push_back(std::move(row));
          row.clear();
          tokens = 0;
        }
        row.push_back(s);
        tokens += suffix_len(s);
      }
      plan.suffixes.push_back(std::move(row));
    }
  }

  // Rows sorted by new tokens first: padded new tokens run through every layer, padded past
  // positions are only attended to. Chunk() then cuts the list where padding would cost most.
  auto row_len = [&](const std::vector<int>& row) {
    int n = 0;
    for (int s : row) n += suffix_len(s);
    return n;
  };
  auto row_past = [&](const std::vector<int>& row) { return pasts[in.suffix_group[row[0]]].length; };
  std::stable_sort(plan.suffixes.begin(), plan.suffixes.end(), [&](const std::vector<int>& a, const std::vector<int>& b) {
    if (row_len(a) != row_len(b)) return row_len(a) < row_len(b);
    return row_past(a) < row_past(b);
  });

  const bool packed = PacksSuffixes();
  plan.packed_tokens.resize(packed ? plan.suffixes.size() : 0);
  plan.packed_offsets.resize(plan.packed_tokens.size());
  plan.packed_segments.resize(plan.packed_tokens.size());
  for (size_t r = 0; r < plan.suffixes.size(); ++r) {
    const std::vector<int>& members = plan.suffixes[r];
    const GroupPast& past = pasts[in.suffix_group[members[0]]];
    ExtendRow row;
    row.past = past.block.get();
    row.past_len = past.length;
    if (!packed) {
      const int s = members[0];
      row.tokens = in.suffix_tokens + in.suffix_offsets[s];
      row.num_tokens = suffix_len(s);
      row.logits_positions = {row.num_tokens - 1};
    } else {
      // Item k is segment k + 1 and sits at positions past, past + 1, ... like a fresh row's.
      auto& tokens = plan.packed_tokens[r];
      auto& offsets = plan.packed_offsets[r];
      auto& segments = plan.packed_segments[r];
      for (size_t k = 0; k < members.size(); ++k) {
        const int s = members[k];
        const int32_t* ids = in.suffix_tokens + in.suffix_offsets[s];
        for (int i = 0; i < suffix_len(s); ++i) {
          tokens.push_back(ids[i]);
          offsets.push_back(i);
          segments.push_back(static_cast<int32_t>(k + 1));
        }
        row.logits_positions.push_back(static_cast<int32_t>(tokens.size() - 1));
      }
      row.tokens = tokens.data();
      row.offsets = offsets.data();
      row.segments = segments.data();
      row.num_tokens = static_cast<int>(tokens.size());
    }
    plan.rows.push_back(row);
  }
  return plan;
}

void Scorer::RunSuffixes(const ScoreInput& in, const std::vector<GroupPast>& pasts, ScoreOutput& output) {
  const int64_t vocab = decoder_->Info().vocab_size;
  output.label_logits.assign(in.label_ids_length, 0.0f);
  output.log_sum_exp.assign(in.num_suffixes, 0.0f);

  const SuffixRows plan = PlanSuffixRows(in, pasts);
  const std::vector<ExtendRow>& rows = plan.rows;
  for (const ExtendRow& row : rows) output.counters.suffix_tokens += row.num_tokens;
  for (auto [begin, end] : Chunk(rows, true)) {
    std::vector<ExtendRow> chunk(rows.begin() + begin, rows.begin() + end);
    ExtendResult result = decoder_->Extend(chunk, true);
    Account(rows, begin, end, output.counters);
    output.counters.suffix_passes += 1;
    for (size_t i = begin; i < end; ++i) {
      const std::vector<int>& members = plan.suffixes[i];
      for (size_t k = 0; k < members.size(); ++k) {
        const int s = members[k];
        const float* logits = result.logits.data() + ((i - begin) * result.logits_per_row + k) * vocab;
        double max_logit = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v) max_logit = std::max<double>(max_logit, logits[v]);
        double sum = 0.0;
        for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max_logit);
        output.log_sum_exp[s] = static_cast<float>(max_logit + std::log(sum));
        for (int j = in.label_offsets[s]; j < in.label_offsets[s + 1]; ++j) {
          output.label_logits[j] = logits[in.label_ids[j]];
        }
      }
    }
  }
}

std::vector<std::pair<size_t, size_t>> Scorer::Chunk(const std::vector<ExtendRow>& rows, bool want_logits) const {
  // Optimal contiguous split of the (sorted) rows into passes, by dynamic programming over the end
  // of the last pass. The cost of a pass, in token-equivalents of body compute, is
  //   rows x S x (1 + attention_weight x (P + S)) + pass_overhead_tokens
  // (S, P: its longest new run and longest past; padding included, since padding is computed),
  // and a pass must fit the token, past-bytes, attention and logits budgets. One pass when the
  // rows are alike; several when merging long and short rows would compute more padding than a
  // pass costs.
  const ModelInfo& info = decoder_->Info();
  const size_t n = rows.size();
  std::vector<std::pair<size_t, size_t>> chunks;
  if (n == 0) return chunks;
  const double kv_bytes = static_cast<double>(info.kv.BytesPerToken());
  // "Infinite" overhead means fewest passes; keep it finite so that sums still compare.
  const double overhead = std::min(options_.pass_overhead_tokens, 1e12);
  std::vector<double> best(n + 1, 0.0);
  std::vector<size_t> cut(n + 1, 0);
  for (size_t end = 1; end <= n; ++end) {
    best[end] = -1.0;
    int64_t max_past = 0, max_new = 0;
    for (size_t begin = end; begin-- > 0;) {
      max_past = std::max<int64_t>(max_past, rows[begin].past_len);
      max_new = std::max<int64_t>(max_new, rows[begin].num_tokens);
      const int64_t count = static_cast<int64_t>(end - begin);
      bool fits = count * max_new <= options_.token_budget &&
                  count * max_past * kv_bytes <= static_cast<double>(options_.past_budget_bytes) &&
                  count * max_new * (max_past + max_new) <= options_.attention_budget;
      if (want_logits && !info.has_logits_index) {
        fits = fits && count * max_new * info.vocab_size * 4 <= kStockLogitsBudgetBytes;
      }
      // A single row always forms a pass, whatever the budgets say (it was validated to fit
      // the context); a larger span that does not fit only grows as begin decreases.
      if (!fits && count > 1) break;
      const double pass_cost = static_cast<double>(count * max_new) *
                                   (1.0 + options_.attention_weight * static_cast<double>(max_past + max_new)) +
                               overhead;
      const double total = best[begin] + pass_cost;
      if (best[end] < 0 || total < best[end]) {
        best[end] = total;
        cut[end] = begin;
      }
    }
  }
  for (size_t end = n; end > 0; end = cut[end]) chunks.emplace_back(cut[end], end);
  std::reverse(chunks.begin(), chunks.end());
  return chunks;
}

void Scorer::Account(const std::vector<ExtendRow>& rows, size_t begin, size_t end, ScoreCounters& counters) const {
  int64_t max_past = 0, max_new = 0, real = 0;
  for (size_t i = begin; i < end; ++i) {
    counters.past_tokens_copied += rows[i].past_len;
    max_past = std::max<int64_t>(max_past, rows[i].past_len);
    max_new = std::max<int64_t>(max_new, rows[i].num_tokens);
    real += rows[i].num_tokens;
  }
  counters.forward_passes += 1;
  counters.padded_tokens += static_cast<uint64_t>(static_cast<int64_t>(end - begin) * max_new - real);
}

}  // namespace decide
