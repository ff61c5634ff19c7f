// The scoring algorithm, in plain C++ (no N-API, no ORT types in its interface):
//   1. every group's prefix is matched against the prefix cache (longest common prefix);
//   2. a prefix stage extends the prefixes that are not fully cached, each row starting from its
//      cached part, and inserts the results into the cache;
//   3. a suffix stage runs the questions with their group's prefix KV as past, and reads the
//      logits of each question's label tokens at its last position, plus the log-sum-exp over the
//      whole vocabulary there.
// With a graph that takes segment ids (row_packing.h), a group's questions are packed into rows,
// and a state being computed takes its first row of questions into its own prefix row, so those
// questions need no copy of its KV at all; the other rows get one copy each. Otherwise each
// question is a suffix row of its own with the prefix KV forked into it.
// Each stage's rows are sorted by shape and split into forward passes (pass_planner.h): every pass fits
// the token, past-bytes, attention and logits budgets, and within them a cost model picks the split
// that computes the least padding plus per-pass overhead.
// Thread: Score() runs on a libuv worker thread; calls are serialised by compute_mu_ (the cache
// and the session are used by one call at a time; the TypeScript scheduler coalesces concurrent
// requests into one call instead). compute_mu_ is held for a whole call, forward passes included,
// so nothing the JS thread calls may take it: Counters(), CacheBytes(), CacheEntries() and
// CallsInProgress() read atomics or the totals under stats_mu_ (held for a copy, never across a
// pass), and ClearCache() clears at once only when no call runs, else leaves the clear to the
// running call's end. Ownership: ScoreInput points into JS typed arrays that the AsyncWorker keeps
// alive for the duration of the call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "decoder.h"
#include "kv/prefix_cache.h"
#include "row_packing.h"
#include "score_input.h"

namespace decide {

// No defaults here: the binding sets every field from the options that src/engine/engine-options.ts
// resolves (the one place for defaults), and refuses a missing or out-of-range one.
struct ScorerOptions {
  DecoderOptions decoder;
  size_t prefix_cache_bytes = 0;
  // Upper bound on padded NEW tokens (rows x longest new run) computed in one forward pass.
  int64_t token_budget = 0;
  // Upper bound on the forked past (rows x longest past x KV bytes per token) of one pass.
  int64_t past_budget_bytes = 0;
  // Bytes of a pass's logits before the pass is split: wanted positions x vocabulary (the head's
  // temporaries included) on a gathered head; every position x vocabulary on a stock graph.
  int64_t logits_budget_bytes = 0;
  // Upper bound on attention scores (rows x new x (past + new)) in one forward pass; keeps the
  // [rows, heads, S, P+S] score tensor of long prefixes from exhausting memory.
  // 0: sized at load from the device's free memory (AttentionBudgetFromDevice).
  int64_t attention_budget = 0;
  int num_heads = 0;  // query heads, for that sizing
  // The least that sizing gives, and all it gives where the device cannot tell its free memory.
  int64_t attention_budget_floor = 0;
  int max_context = 0;  // 0: unlimited (the graph itself still bounds it)
  // Attention FLOPs per (query token, key) relative to the body FLOPs of one token
  // (2 x heads x head_dim x layers / body params): how much a padded past position costs.
  double attention_weight = 0.0;
  // Fixed cost of one more forward pass (session run, copies), in token-equivalents.
  double pass_overhead_tokens = 0.0;
  // Pack a group's questions into one suffix row when the graph takes segment ids.
  bool pack_suffixes = false;
  // Prefill a long state in chunks (PrefillChunk): a CPU win, where a pass's attention over the
  // causally hidden half costs real time; on a GPU the extra passes cost more than they save.
  bool prefill_chunks = false;
  // How much lower than the process's the compute threads' priority is (thread_priority.h).
  int compute_nice = 0;
};

struct ScoreCounters {
  uint64_t calls = 0;
  uint64_t prefix_tokens_computed = 0;
  uint64_t cached_tokens = 0;  // prefix tokens served from the prefix cache or an identical group of the call
  uint64_t suffix_tokens = 0;
  uint64_t forward_passes = 0;
  uint64_t prefix_passes = 0;
  uint64_t suffix_passes = 0;
  uint64_t padded_tokens = 0;  // tokens of padding the passes computed (waste)
  uint64_t prefix_cache_evictions = 0;  // prefixes the byte bound pushed out of the cache
  uint64_t past_tokens_copied = 0;  // past positions copied into the passes' batch KV (one per row and past token)
  uint64_t pass_buffer_moves = 0;   // shape buckets: times a fixed pass buffer had to grow (Decoder::PassBufferMoves)
  // Calls into the provider's copy or fill API (a batch of copies issued as one call counts once)
  // and the bytes that crossed between host and device (device.h).
  uint64_t device_copies = 0;
  uint64_t host_to_device_bytes = 0;
  uint64_t device_to_host_bytes = 0;
  double run_millis = 0;   // inside ONNX Runtime session runs
  double host_millis = 0;  // the rest of the call
};

struct ScoreOutput {
  std::vector<float> label_logits;  // concatenated per suffix, label_offsets layout
  std::vector<float> log_sum_exp;   // one per suffix
  std::vector<int32_t> cached_tokens;  // per group: prefix tokens not computed by this call
  ScoreCounters counters;           // this call only
};

// The shortest prefill chunk: below it the chunk's matrix products lose more than its attention saves.
constexpr int kMinPrefillChunk = 512;

class Scorer {
 public:
  explicit Scorer(const ScorerOptions& options);
  ~Scorer();

  ScoreOutput Score(const ScoreInput& input);

  const ModelInfo& Info() const { return decoder_->Info(); }
  const ScorerOptions& Options() const { return options_; }
  std::string DeviceCopyPath() const { return decoder_->GetDevice()->CopyPath(); }
  // Whether suffix rows are packed (the option is on and the graph can run packed rows).
  bool PacksSuffixes() const;
  // Readable from any thread while a call runs (see the thread note above).
  ScoreCounters Counters() const;
  size_t CacheBytes() const { return cache_bytes_.load(std::memory_order_relaxed); }
  size_t CacheEntries() const { return cache_entries_.load(std::memory_order_relaxed); }
  // 1 while a call holds the compute lock (computing), else 0.
  int CallsInProgress() const { return calls_in_progress_.load(std::memory_order_relaxed); }
  // Empties the cache now when no call is running; otherwise the running call empties it when it
  // ends (so its own inserts go too), and at the latest the next call does before it starts.
  // Never waits for a running call.
  void ClearCache();

 private:
  struct GroupPast {
    std::shared_ptr<KvBlock> block;
    int length = 0;
  };
  void Validate(const ScoreInput& input) const;
  // Per group, its questions cut into packed rows (PackGroups); empty lists when not packing.
  using GroupRows = std::vector<std::vector<std::vector<int>>>;
  PackingLimits Limits() const;
  // Computes the prefixes the cache lacks; a group whose first row of questions ran in the same
  // pass as its state is marked in `fused` (its answers are in `output` already).
  std::vector<GroupPast> ResolvePrefixes(const ScoreInput& input, const GroupRows& packed, std::vector<bool>& fused,
                                         ScoreOutput& output);
  // Tokens per prefill chunk for a state with `new_tokens` to compute (new_tokens: one pass).
  int PrefillChunk(int new_tokens) const;
  // Runs a long state's prefill but its last chunk, one pass per chunk, and points `match` at the
  // partial block, so the last chunk runs with the call's other prefix rows.
  void PrefillLeadingChunks(const ScoreInput& input, int group, PrefixCache::Match& match, ScoreCounters& counters);
  void RunSuffixes(const ScoreInput& input, const std::vector<GroupPast>& pasts, const GroupRows& packed,
                   const std::vector<bool>& fused, ScoreOutput& output);
  // Reads the answers of `suffixes` (in logits-position order) from row `row` of a pass.
  void ReadLogits(const ScoreInput& input, const ExtendResult& result, int row, const std::vector<int>& suffixes,
                  ScoreOutput& output) const;
  // Counts the call's device operations and time (a snapshot of the Device's counters at its start).
  void AccountDevice(const DeviceCounters& before, double run_millis_before,
                     std::chrono::steady_clock::time_point start, ScoreCounters& counters) const;
  // Splits rows (already sorted for similar shapes) into consecutive passes within the budgets (PlanPasses).
  std::vector<std::pair<size_t, size_t>> Chunk(const std::vector<ExtendRow>& rows, bool want_logits) const;
  void Account(const std::vector<ExtendRow>& rows, size_t begin, size_t end, const ExtendResult& result,
               ScoreCounters& counters) const;
  // Under compute_mu_: empties the cache if a clear was asked for; refreshes the size snapshot.
  void ApplyPendingClear();
  void PublishCacheSize();

  ScorerOptions options_;
  std::mutex compute_mu_;  // one call at a time; held across forward passes
  std::unique_ptr<Decoder> decoder_;
  PrefixCache cache_;  // under compute_mu_
  mutable std::mutex stats_mu_;  // guards totals_ only; held for a copy or an add
  ScoreCounters totals_;
  std::atomic<size_t> cache_bytes_{0};  // snapshot of cache_, published under compute_mu_
  std::atomic<size_t> cache_entries_{0};
  std::atomic<int> calls_in_progress_{0};
  std::atomic<bool> clear_pending_{false};
};

}  // namespace decide
