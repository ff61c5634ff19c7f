#include "scorer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "errors.h"
#include "pass_planner.h"
#include "row_packing.h"

namespace decide {
namespace {

// A gathered head's bytes per vocabulary entry of a wanted position, its temporaries included (the
// logits, an fp32 copy and the log-sum-exp's exponentials): 12 covers fp16 and fp32 graphs.
constexpr int64_t kGatheredLogitsBytesPerEntry = 12;

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
  into.pass_buffer_moves += from.pass_buffer_moves;
  into.device_copies += from.device_copies;
  into.host_to_device_bytes += from.host_to_device_bytes;
  into.device_to_host_bytes += from.device_to_host_bytes;
  into.run_millis += from.run_millis;
  into.host_millis += from.host_millis;
}

// Marks a call as computing for as long as it holds the compute lock.
class InProgress {
 public:
  explicit InProgress(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
  ~InProgress() { count_.fetch_sub(1); }

 private:
  std::atomic<int>& count_;
};

}  // namespace

namespace {

// Attention scores per pass such that the pass's score tensors ([rows, heads, S, P + S] fp32, with
// the softmax's copies: about 3 of them) fill at most a quarter of the device's free memory; never
// below `floor`, which is also the budget of a device that cannot tell its free memory.
int64_t AttentionBudgetFromDevice(const Device& device, int num_heads, int64_t floor) {
  const size_t free = device.FreeMemoryBytes();
  if (free == 0 || num_heads <= 0) return floor;
  return std::max<int64_t>(floor, static_cast<int64_t>(free / 4 / (static_cast<size_t>(num_heads) * 4 * 3)));
}

}  // namespace

Scorer::Scorer(const ScorerOptions& options)
    : options_(options),
      decoder_(std::make_unique<Decoder>(options.decoder)),
      cache_(options.prefix_cache_bytes) {
  if (options_.attention_budget == 0) {
    options_.attention_budget = AttentionBudgetFromDevice(*decoder_->GetDevice(), options_.num_heads, options_.attention_budget_floor);
  }
}

Scorer::~Scorer() {
  // Blocks hold Device memory: free them while the Decoder (and its Device) still exists.
  cache_.Clear();
}

ScoreCounters Scorer::Counters() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return totals_;
}

void Scorer::ClearCache() {
  clear_pending_.store(true);
  // A running call holds compute_mu_ and sees the flag when it ends (or the next call at its start).
  std::unique_lock<std::mutex> lock(compute_mu_, std::try_to_lock);
  if (lock.owns_lock()) ApplyPendingClear();
}

void Scorer::ApplyPendingClear() {
  if (clear_pending_.exchange(false)) cache_.Clear();
  PublishCacheSize();
}

void Scorer::PublishCacheSize() {
  cache_bytes_.store(cache_.Bytes(), std::memory_order_relaxed);
  cache_entries_.store(cache_.Entries(), std::memory_order_relaxed);
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
  std::lock_guard<std::mutex> lock(compute_mu_);
  InProgress in_progress(calls_in_progress_);
  const auto start = std::chrono::steady_clock::now();
  const DeviceCounters device_before = decoder_->GetDevice()->Counters();
  const double run_before = decoder_->RunMillis();
  const uint64_t moves_before = decoder_->PassBufferMoves();
  // A clear asked for after the previous call's end; on any exit, one asked for during this call.
  ApplyPendingClear();
  struct ClearOnExit {
    Scorer* scorer;
    ~ClearOnExit() { scorer->ApplyPendingClear(); }
  } clear_on_exit{this};
  Validate(input);
  ScoreOutput output;
  output.counters.calls = 1;
  output.label_logits.assign(input.label_ids_length, 0.0f);
  output.log_sum_exp.assign(input.num_suffixes, 0.0f);
  const GroupRows packed = PacksSuffixes() ? PackGroups(input, Limits()) : GroupRows(input.num_groups);
  std::vector<bool> fused(input.num_groups, false);
  std::vector<GroupPast> pasts = ResolvePrefixes(input, packed, fused, output);
  RunSuffixes(input, pasts, packed, fused, output);
  // The KV copies of the last pass are queued on the device: done before the call returns.
  decoder_->GetDevice()->Synchronize();
  AccountDevice(device_before, run_before, start, output.counters);
  output.counters.pass_buffer_moves = decoder_->PassBufferMoves() - moves_before;
  {
    std::lock_guard<std::mutex> stats(stats_mu_);
    Add(totals_, output.counters);
  }
  return output;
}

void Scorer::AccountDevice(const DeviceCounters& before, double run_millis_before,
                           std::chrono::steady_clock::time_point start, ScoreCounters& counters) const {
  const DeviceCounters& now = decoder_->GetDevice()->Counters();
  counters.device_copies = now.device_copies - before.device_copies;
  counters.host_to_device_bytes = now.host_to_device_bytes - before.host_to_device_bytes;
  counters.device_to_host_bytes = now.device_to_host_bytes - before.device_to_host_bytes;
  counters.run_millis = decoder_->RunMillis() - run_millis_before;
  const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  counters.host_millis = std::max(0.0, total - counters.run_millis);
}

PackingLimits Scorer::Limits() const {
  const ModelInfo& info = decoder_->Info();
  PackingLimits limits;
  limits.token_budget = options_.token_budget;
  limits.attention_budget = options_.attention_budget;
  if (!info.has_logits_index) {
    // A stock graph (no token index) returns logits for every position: the budget bounds them all.
    limits.logits_bytes_per_token = info.vocab_size * 4;
    limits.logits_budget_bytes = options_.logits_budget_bytes;
  }
  return limits;
}

std::vector<Scorer::GroupPast> Scorer::ResolvePrefixes(const ScoreInput& in, const GroupRows& packed,
                                                       std::vector<bool>& fused, ScoreOutput& output) {
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
  auto prefix_len = [&](int g) { return in.prefix_offsets[g + 1] - in.prefix_offsets[g]; };
  auto scope = [&](int g) { return in.prefix_scopes ? in.prefix_scopes[g] : 0; };

  for (int g = 0; g < in.num_groups; ++g) {
    const int32_t* ids = in.prefix_tokens + in.prefix_offsets[g];
    int count = prefix_len(g);
    auto& candidates = seen[HashIds(ids, count)];
    for (int other : candidates) {
      const int32_t* other_ids = in.prefix_tokens + in.prefix_offsets[other];
      if (scope(other) == scope(g) && prefix_len(other) == count && std::equal(ids, ids + count, other_ids)) {
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
    PrefixCache::Match match = cache_.Lookup(scope(g), ids, count);
    counters.cached_tokens += match.length;
    output.cached_tokens[g] = match.length;
    if (match.length == count) {
      pasts[g] = GroupPast{match.block, count};
    } else {
      counters.prefix_tokens_computed += count - match.length;
      pending.push_back(Pending{g, match});
    }
  }

  // A state being computed takes its first row of questions into the same row when the row still
  // fits: the questions read the state's KV inside the pass, and no copy of it is made for them.
  const PackingLimits limits = Limits();
  std::vector<PackedRow> fused_rows(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    const int g = pending[i].group;
    if (packed[g].empty()) continue;
    const int done = pending[i].match.length;
    PackedRow row = MakePackedRow(in, in.prefix_tokens + in.prefix_offsets[g] + done, prefix_len(g) - done, packed[g][0]);
    if (!FitsPackedRow(limits, done, static_cast<int64_t>(row.tokens.size()))) continue;
    fused_rows[i] = std::move(row);
    fused[g] = true;
  }

  // A long state is prefilled in chunks, each after the KV of the ones before it (PrefillChunk).
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!fused[pending[i].group]) PrefillLeadingChunks(in, pending[i].group, pending[i].match, counters);
  }

  // Rows sorted by the tokens they compute (then by past), so that PlanPasses can cut the list into
  // passes with little padding.
  auto new_tokens = [&](size_t i) {
    const Pending& p = pending[i];
    return fused[p.group] ? static_cast<int>(fused_rows[i].tokens.size()) : prefix_len(p.group) - p.match.length;
  };
  std::vector<size_t> order(pending.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (new_tokens(a) != new_tokens(b)) return new_tokens(a) < new_tokens(b);
    return pending[a].match.length < pending[b].match.length;
  });
  std::vector<ExtendRow> rows;
  bool any_fused = false;
  for (size_t i : order) {
    const Pending& p = pending[i];
    if (fused[p.group]) {
      rows.push_back(fused_rows[i].AsExtendRow(p.match.block.get(), p.match.length));
      any_fused = true;
      continue;
    }
    ExtendRow row;
    row.past = p.match.block.get();
    row.past_len = p.match.length;
    row.tokens = in.prefix_tokens + in.prefix_offsets[p.group] + p.match.length;
    row.num_tokens = prefix_len(p.group) - p.match.length;
    row.lead = row.num_tokens;  // all state: a split pass puts it in the state part
    rows.push_back(row);
  }
  for (auto [begin, end] : Chunk(rows, any_fused)) {
    std::vector<ExtendRow> chunk(rows.begin() + begin, rows.begin() + end);
    bool want_logits = false;
    for (const ExtendRow& row : chunk) want_logits = want_logits || !row.logits_positions.empty();
    ExtendResult result = decoder_->Extend(chunk, want_logits);
    Account(rows, begin, end, result, counters);
    counters.prefix_passes += 1;
    // Each row's state as a block: where the row's past is the pass's whole past, its slice of the
    // pass's present tensors (no copy); else a new block filled by one batch of copies for all such
    // rows (its cached part and its new KV). The row's first state_new new tokens are the state's;
    // fused questions follow them.
    std::vector<std::shared_ptr<KvBlock>> blocks;
    std::vector<CopyRun> copies;
    for (size_t i = begin; i < end; ++i) {
      const Pending& p = pending[order[i]];
      const int count = prefix_len(p.group);
      const int row = static_cast<int>(i - begin);
      std::shared_ptr<KvBlock> block;
      if (p.match.length == result.present.past_len) block = decoder_->Kv().ViewRow(result.present, row, count);
      if (!block) {
        block = std::make_shared<KvBlock>(decoder_->GetDevice(), shape, count);
        if (p.match.length > 0) decoder_->Kv().AddPrefixCopy(copies, *p.match.block, p.match.length, *block);
        decoder_->Kv().AddNewKvCopy(copies, result.present, row, count - p.match.length, *block, p.match.length);
      }
      blocks.push_back(std::move(block));
    }
    // A view keeps its whole pass alive, and the cache counts the pass (prefix_cache.h). A pass
    // larger than the whole cache is not held: the states the cache would keep of it (the last
    // ones inserted, as many as fit) are copied out into blocks of their own, in the same batch.
    // Past the cache's room, the earlier ones would be evicted at once: neither copied nor inserted.
    std::vector<std::shared_ptr<KvBlock>> cached(blocks);
    size_t room = cache_.Capacity();
    for (size_t i = end; i-- > begin;) {
      const std::shared_ptr<KvBlock>& view = blocks[i - begin];
      if (!view->owner || view->owner_bytes <= cache_.Capacity()) continue;
      cached[i - begin] = nullptr;
      const size_t bytes = static_cast<size_t>(view->length) * shape.BytesPerToken();
      if (view->length <= 0 || bytes > room) continue;
      room -= bytes;
      cached[i - begin] = std::make_shared<KvBlock>(decoder_->GetDevice(), shape, view->length);
      decoder_->Kv().AddPrefixCopy(copies, *view, view->length, *cached[i - begin]);
    }
    decoder_->Kv().Submit(copies);
    for (size_t i = begin; i < end; ++i) {
      const Pending& p = pending[order[i]];
      const int32_t* ids = in.prefix_tokens + in.prefix_offsets[p.group];
      const int count = prefix_len(p.group);
      std::shared_ptr<KvBlock> block = std::move(blocks[i - begin]);
      if (cached[i - begin]) counters.prefix_cache_evictions += cache_.Insert(scope(p.group), ids, count, cached[i - begin]);
      PublishCacheSize();
      pasts[p.group] = GroupPast{std::move(block), count};
      if (fused[p.group]) {
        const PackedRow& row = fused_rows[order[i]];
        counters.suffix_tokens += row.tokens.size() - row.lead;
        ReadLogits(in, result, static_cast<int>(i - begin), row.suffixes, output);
      }
    }
  }
  for (int g = 0; g < in.num_groups; ++g) {
    if (same_as[g] >= 0) pasts[g] = pasts[same_as[g]];
  }
  return pasts;
}

int Scorer::PrefillChunk(int new_tokens) const {
  if (!options_.prefill_chunks) return new_tokens;
  // One pass computes every query's scores against every key, the causally hidden half included:
  // about attention_weight x n^2 token-equivalents for n new tokens. In k chunks that is
  // attention_weight x n^2 (k + 1) / 2k, plus k - 1 more passes; the best k is
  // n sqrt(attention_weight / (2 x pass_overhead)). Chunks stay at least kMinPrefillChunk tokens:
  // shorter ones run the projections and MLP as narrower, less efficient matrix products.
  if (new_tokens < 2 * kMinPrefillChunk || options_.attention_weight <= 0) return new_tokens;
  const double overhead = std::max(options_.pass_overhead_tokens, 1.0);
  const double best = new_tokens * std::sqrt(options_.attention_weight / (2.0 * overhead));
  const int chunks = std::min(static_cast<int>(std::lround(best)), new_tokens / kMinPrefillChunk);
  if (chunks <= 1) return new_tokens;
  return (new_tokens + chunks - 1) / chunks;
}

void Scorer::PrefillLeadingChunks(const ScoreInput& in, int group, PrefixCache::Match& match, ScoreCounters& counters) {
  const int count = in.prefix_offsets[group + 1] - in.prefix_offsets[group];
  const int chunk = PrefillChunk(count - match.length);
  if (chunk >= count - match.length) return;
  // The state's block, filled chunk by chunk; each chunk's pass reads the ones before as its past.
  auto block = std::make_shared<KvBlock>(decoder_->GetDevice(), decoder_->Info().kv, count);
  std::vector<CopyRun> copies;
  if (match.length > 0) decoder_->Kv().AddPrefixCopy(copies, *match.block, match.length, *block);
  decoder_->Kv().Submit(copies);
  const int32_t* ids = in.prefix_tokens + in.prefix_offsets[group];
  int done = match.length;
  while (count - done > chunk) {
    std::vector<ExtendRow> rows(1);
    rows[0].past = block.get();
    rows[0].past_len = done;
    rows[0].tokens = ids + done;
    rows[0].num_tokens = chunk;
    ExtendResult result = decoder_->Extend(rows, false);
    Account(rows, 0, 1, result, counters);
    counters.prefix_passes += 1;
    copies.clear();
    decoder_->Kv().AddNewKvCopy(copies, result.present, 0, chunk, *block, done);
    decoder_->Kv().Submit(copies);
    done += chunk;
  }
  // The last chunk runs with the call's other prefix rows, after this partial block as its past.
  match = PrefixCache::Match{std::move(block), done};
}

bool Scorer::PacksSuffixes() const {
  return options_.pack_suffixes && decoder_->Info().has_segment_ids;
}

void Scorer::RunSuffixes(const ScoreInput& in, const std::vector<GroupPast>& pasts, const GroupRows& packed,
                         const std::vector<bool>& fused, ScoreOutput& output) {
  auto suffix_len = [&](int s) { return in.suffix_offsets[s + 1] - in.suffix_offsets[s]; };
  const bool packing = PacksSuffixes();
  // Packing: each group's rows of questions but the one that ran with its state's prefill.
  // Otherwise one row per question (only `suffixes` set), its group's past forked in.
  std::vector<PackedRow> planned;
  std::vector<int> planned_group;
  if (packing) {
    for (int g = 0; g < in.num_groups; ++g) {
      for (size_t r = fused[g] ? 1 : 0; r < packed[g].size(); ++r) {
        planned.push_back(MakePackedRow(in, nullptr, 0, packed[g][r]));
        planned_group.push_back(g);
      }
    }
  } else {
    for (int s = 0; s < in.num_suffixes; ++s) {
      PackedRow row;
      row.suffixes = {s};
      planned.push_back(std::move(row));
      planned_group.push_back(in.suffix_group[s]);
    }
  }
  auto new_tokens = [&](size_t i) {
    return packing ? static_cast<int>(planned[i].tokens.size()) : suffix_len(planned[i].suffixes[0]);
  };
  // Sorted by new tokens first: padded new tokens run through every layer, padded past positions
  // are only attended to. PlanPasses then cuts the list where padding would cost most.
  std::vector<size_t> order(planned.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (new_tokens(a) != new_tokens(b)) return new_tokens(a) < new_tokens(b);
    return pasts[planned_group[a]].length < pasts[planned_group[b]].length;
  });
  std::vector<ExtendRow> rows;
  rows.reserve(order.size());
  for (size_t i : order) {
    const GroupPast& past = pasts[planned_group[i]];
    if (packing) {
      rows.push_back(planned[i].AsExtendRow(past.block.get(), past.length));
    } else {
      const int s = planned[i].suffixes[0];
      ExtendRow row;
      row.past = past.block.get();
      row.past_len = past.length;
      row.tokens = in.suffix_tokens + in.suffix_offsets[s];
      row.num_tokens = suffix_len(s);
      row.logits_positions = {row.num_tokens - 1};
      row.labels = {ExtendRow::Labels{in.label_ids + in.label_offsets[s], in.label_offsets[s + 1] - in.label_offsets[s]}};
      rows.push_back(row);
    }
    output.counters.suffix_tokens += rows.back().num_tokens;
  }
  for (auto [begin, end] : Chunk(rows, true)) {
    std::vector<ExtendRow> chunk(rows.begin() + begin, rows.begin() + end);
    ExtendResult result = decoder_->Extend(chunk, true);
    Account(rows, begin, end, result, output.counters);
    output.counters.suffix_passes += 1;
    for (size_t i = begin; i < end; ++i) {
      ReadLogits(in, result, static_cast<int>(i - begin), planned[order[i]].suffixes, output);
    }
  }
}

void Scorer::ReadLogits(const ScoreInput& in, const ExtendResult& result, int row, const std::vector<int>& suffixes,
                        ScoreOutput& output) const {
  for (size_t k = 0; k < suffixes.size(); ++k) {
    const int s = suffixes[k];
    const size_t w = static_cast<size_t>(result.wanted_begin[row]) + k;
    output.log_sum_exp[s] = result.log_sum_exp[w];
    const float* labels = result.label_logits.data() + result.label_begin[w];
    std::copy(labels, labels + (in.label_offsets[s + 1] - in.label_offsets[s]), output.label_logits.begin() + in.label_offsets[s]);
  }
}

std::vector<std::pair<size_t, size_t>> Scorer::Chunk(const std::vector<ExtendRow>& rows, bool want_logits) const {
  const ModelInfo& info = decoder_->Info();
  PassLimits limits;
  limits.token_budget = options_.token_budget;
  limits.past_budget_bytes = options_.past_budget_bytes;
  limits.attention_budget = options_.attention_budget;
  limits.kv_bytes_per_token = static_cast<double>(info.kv.BytesPerToken());
  limits.attention_weight = options_.attention_weight;
  limits.pass_overhead_tokens = options_.pass_overhead_tokens;
  limits.shape_buckets = decoder_->ShapeBuckets();
  limits.split_states = decoder_->SplitsStates();
  limits.length_multiple = decoder_->LengthMultiple();
  if (want_logits && !info.has_logits_index) {
    limits.logits_bytes_per_token = info.vocab_size * 4;
    limits.logits_budget_bytes = options_.logits_budget_bytes;
  } else if (want_logits) {
    // Many short rows fit a token budget with a wanted position each: their logits are bounded here.
    limits.logits_bytes_per_position = info.vocab_size * kGatheredLogitsBytesPerEntry;
    limits.logits_budget_bytes = options_.logits_budget_bytes;
  }
  return PlanPasses(rows, limits);
}

void Scorer::Account(const std::vector<ExtendRow>& rows, size_t begin, size_t end, const ExtendResult& result,
                     ScoreCounters& counters) const {
  int64_t real = 0;
  for (size_t i = begin; i < end; ++i) {
    counters.past_tokens_copied += rows[i].past_len;
    real += rows[i].num_tokens;
  }
  counters.forward_passes += 1;
  // What the pass ran beyond the rows' tokens: padding to its longest row, to its bucket, and
  // between a split pass's states and items.
  counters.padded_tokens += static_cast<uint64_t>(result.computed_tokens - real);
}

}  // namespace decide
