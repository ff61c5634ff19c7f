// C++ tests of the engine's parts that need no ONNX Runtime session: the prefix cache, row packing,
// the pass planner and the KV store's movements, the latter over a counting fake Device (host
// memory that counts every call into it). Built with the addon (`npm run build:native`) as
// build/Release/decide_native_tests; test/native/cpp-units.test.ts runs it in `npm test`.
// Prints one line per failed check and the summary line "N passed, M failed"; exits 1 on a failure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "../device/device.h"
#include "../errors.h"
#include "../kv/kv_store.h"
#include "../kv/prefix_cache.h"
#include "../device/cuda_module.h"
#include "../ops/fused_ops.h"
#include "../ops/row_quantize_op.h"
#include "../pass_planner.h"
#include "../row_packing.h"
#include "../shape_buckets.h"
#include "device_kernels_emulated.h"

namespace {

int g_passed = 0, g_failed = 0;
std::string g_test;

#define CHECK(cond)                                                                                        \
  do {                                                                                                     \
    if (cond) {                                                                                            \
      ++g_passed;                                                                                          \
    } else {                                                                                               \
      ++g_failed;                                                                                          \
      std::cerr << "FAIL " << g_test << ": " #cond " (" << __FILE__ << ":" << __LINE__ << ")" << std::endl; \
    }                                                                                                      \
  } while (0)

void Test(const std::string& name, const std::function<void()>& body) {
  g_test = name;
  try {
    body();
  } catch (const std::exception& e) {
    ++g_failed;
    std::cerr << "FAIL " << name << ": threw " << e.what() << std::endl;
  }
}

using decide::CopyRun;

// Host memory that counts allocations, frees and copy batches, and executes copies like the CPU.
class CountingDevice final : public decide::Device {
 public:
  int allocs = 0, frees = 0, batches = 0;
  size_t runs_copied = 0, rows_copied = 0;
  decide::Provider Kind() const override { return decide::Provider::kCpu; }
  void* Alloc(size_t bytes) override {
    ++allocs;
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    std::memset(p, 0x7f, bytes);  // garbage where nothing was written
    return p;
  }
  void Free(void* ptr) override {
    ++frees;
    std::free(ptr);
  }
  void* AllocHost(size_t bytes) override { return std::malloc(bytes); }
  void FreeHost(void* ptr) override { std::free(ptr); }
  size_t FreeMemoryBytes() const override { return 0; }
  std::string CopyPath() const override { return "counting"; }
  void Synchronize() override {}
  const OrtMemoryInfo* MemoryInfo() const override { return nullptr; }

 protected:
  uint64_t DoCopyBatch(const std::vector<CopyRun>& runs) override {
    ++batches;
    for (const CopyRun& run : runs) {
      ++runs_copied;
      rows_copied += run.rows;
      decide::CopyRunOnHost(run);
    }
    return 1;
  }
  void DoCopyFromHost(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void DoCopyToHost(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
};

// A device that has failed (as a CUDA context does after an illegal address): every wait and
// every free throws, as the CUDA runtime's error checks do then.
class FailedDevice final : public decide::Device {
 public:
  int free_attempts = 0;
  decide::Provider Kind() const override { return decide::Provider::kCuda; }
  void* Alloc(size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
  void Free(void* ptr) override {
    ++free_attempts;
    std::free(ptr);  // the memory itself is host memory here; the throw is what is tested
    throw decide::EngineError(decide::kErrRuntime, "cudaFree failed with CUDA error 700");
  }
  void* AllocHost(size_t bytes) override { return std::malloc(bytes); }
  void FreeHost(void* ptr) override {
    ++free_attempts;
    std::free(ptr);
    throw decide::EngineError(decide::kErrRuntime, "cudaFreeHost failed with CUDA error 700");
  }
  size_t FreeMemoryBytes() const override { return 0; }
  std::string CopyPath() const override { return "failed"; }
  void Synchronize() override { throw decide::EngineError(decide::kErrRuntime, "cudaStreamSynchronize failed with CUDA error 700"); }
  const OrtMemoryInfo* MemoryInfo() const override { return nullptr; }

 protected:
  uint64_t DoCopyBatch(const std::vector<CopyRun>&) override { return 1; }
  void DoCopyFromHost(void*, const void*, size_t) override {}
  void DoCopyToHost(void*, const void*, size_t) override {}
};

decide::KvShape Shape() {
  decide::KvShape shape;
  shape.num_layers = 3;
  shape.num_kv_heads = 2;
  shape.head_dim = 4;
  shape.elem_size = 4;
  return shape;
}

// A block whose float at (layer, kind, head, position, d) encodes those coordinates.
std::shared_ptr<decide::KvBlock> Filled(decide::Device* device, const decide::KvShape& shape, int length, float tag) {
  auto block = std::make_shared<decide::KvBlock>(device, shape, length);
  for (int l = 0; l < shape.num_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      float* data = reinterpret_cast<float*>(kind == 0 ? block->keys[l] : block->values[l]);
      for (int h = 0; h < shape.num_kv_heads; ++h) {
        for (int t = 0; t < length; ++t) {
          for (int d = 0; d < shape.head_dim; ++d) {
            data[(h * length + t) * shape.head_dim + d] = tag + l * 1000 + kind * 500 + h * 100 + t + d * 0.01f;
          }
        }
      }
    }
  }
  return block;
}

void PrefixCacheTests() {
  Test("prefix cache: the longest common prefix wins, an exact match ends the search", [] {
    CountingDevice device;
    const auto shape = Shape();
    decide::PrefixCache cache(size_t{1} << 20);
    const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 9};
    cache.Insert(0, a.data(), 4, Filled(&device, shape, 4, 0));
    cache.Insert(0, b.data(), 3, Filled(&device, shape, 3, 0));
    const std::vector<int32_t> q = {1, 2, 3, 7, 7};
    auto m = cache.Lookup(0, q.data(), 5);
    CHECK(m.length == 3);
    CHECK(m.block != nullptr && m.block->length == 4);
    const std::vector<int32_t> none = {5, 6};
    CHECK(cache.Lookup(0, none.data(), 2).length == 0);
    CHECK(cache.Entries() == 2);
  });
  Test("prefix cache: an entry is found only by lookups of its own scope", [] {
    CountingDevice device;
    const auto shape = Shape();
    decide::PrefixCache cache(size_t{1} << 20);
    const std::vector<int32_t> a = {1, 2, 3, 4};
    cache.Insert(7, a.data(), 4, Filled(&device, shape, 4, 0));
    const std::vector<int32_t> q = {1, 2, 3, 5};
    CHECK(cache.Lookup(7, q.data(), 4).length == 3);
    CHECK(cache.Lookup(8, q.data(), 4).length == 0);  // a neighbour in key order, of another scope
    CHECK(cache.Lookup(6, a.data(), 4).length == 0);
    CHECK(cache.Lookup(0, a.data(), 4).block == nullptr);
    // The same ids in two scopes are two entries.
    cache.Insert(8, a.data(), 4, Filled(&device, shape, 4, 0));
    CHECK(cache.Entries() == 2);
    CHECK(cache.Lookup(8, a.data(), 4).length == 4);
  });
  Test("prefix cache: views of one forward pass count the whole pass, once, until the last goes", [] {
    const auto shape = Shape();
    const size_t per_token = shape.BytesPerToken();
    // A pass of 4 rows of 5 positions: 20 tokens' worth of memory, kept by any of its views.
    auto pass_memory = std::make_shared<std::vector<char>>(per_token * 20);
    auto view = [&](int row) {
      std::vector<char*> keys(shape.num_layers, pass_memory->data() + row), values(shape.num_layers, pass_memory->data() + row);
      return std::make_shared<decide::KvBlock>(shape, 5, 5, keys, values, pass_memory, per_token * 20);
    };
    decide::PrefixCache cache(per_token * 30);
    const std::vector<int32_t> a = {1, 2}, b = {3, 4}, c = {5, 6};
    cache.Insert(0, a.data(), 2, view(0));
    CHECK(cache.Bytes() == per_token * 20);
    cache.Insert(0, b.data(), 2, view(1));
    CHECK(cache.Bytes() == per_token * 20);  // the same pass: nothing more is held
    // An owned block that does not fit beside the pass: the pass goes, both views with it.
    CountingDevice device;
    CHECK(cache.Insert(0, c.data(), 2, Filled(&device, shape, 12, 0)) == 2);
    CHECK(cache.Bytes() == per_token * 12);
    CHECK(cache.Lookup(0, a.data(), 2).length == 0 && cache.Lookup(0, b.data(), 2).length == 0);
    // A pass larger than the whole cache is not kept.
    decide::PrefixCache small(per_token * 10);
    small.Insert(0, a.data(), 2, view(2));
    CHECK(small.Entries() == 0 && small.Bytes() == 0);
    cache.Clear();
    CHECK(cache.Bytes() == 0);
  });
  Test("prefix cache: the byte bound evicts the least recently used; a block over the bound is not kept", [] {
    CountingDevice device;
    const auto shape = Shape();
    const size_t per_token = shape.BytesPerToken();
    decide::PrefixCache cache(per_token * 10);
    const std::vector<int32_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c = {9, 10, 11, 12};
    CHECK(cache.Insert(0, a.data(), 4, Filled(&device, shape, 4, 0)) == 0);
    CHECK(cache.Insert(0, b.data(), 4, Filled(&device, shape, 4, 0)) == 0);
    CHECK(cache.Lookup(0, a.data(), 4).length == 4);  // a is now the most recent
    CHECK(cache.Insert(0, c.data(), 4, Filled(&device, shape, 4, 0)) == 1);
    CHECK(cache.Lookup(0, b.data(), 4).length == 0);  // b went
    CHECK(cache.Lookup(0, a.data(), 4).length == 4);
    CHECK(cache.Bytes() == per_token * 8);
    const std::vector<int32_t> huge(11, 3);
    cache.Insert(0, huge.data(), 11, Filled(&device, shape, 11, 0));
    CHECK(cache.Lookup(0, huge.data(), 11).length < 11);
    CHECK(cache.Bytes() <= per_token * 10);
    cache.Clear();
    CHECK(cache.Entries() == 0 && cache.Bytes() == 0);
  });
  Test("prefix cache: among thousands of entries a lookup finds the longest common prefix a full scan finds", [] {
    CountingDevice device;
    const auto shape = Shape();
    decide::PrefixCache cache(size_t{1} << 30);
    // States sharing a system prompt, then diverging early or late (a small alphabet makes long
    // partial matches common), as a batch of many short records fills the cache.
    uint32_t seed = 12345;
    auto next = [&seed](uint32_t n) {
      seed = seed * 1664525u + 1013904223u;
      return static_cast<int32_t>((seed >> 8) % n);
    };
    const std::vector<int32_t> system = {11, 12, 13, 14, 15, 16};
    std::vector<std::vector<int32_t>> keys;
    for (int k = 0; k < 3000; ++k) {
      std::vector<int32_t> ids = system;
      const int extra = 1 + next(12);
      for (int i = 0; i < extra; ++i) ids.push_back(next(4));
      cache.Insert(0, ids.data(), static_cast<int>(ids.size()), Filled(&device, shape, static_cast<int>(ids.size()), 0));
      keys.push_back(ids);
    }
    for (int q = 0; q < 500; ++q) {
      std::vector<int32_t> query = q % 5 == 0 ? std::vector<int32_t>{11, 12, 99} : system;
      const int extra = next(14);
      for (int i = 0; i < extra; ++i) query.push_back(next(4));
      int scan = 0;
      for (const auto& key : keys) {
        int common = 0;
        while (common < static_cast<int>(std::min(key.size(), query.size())) && key[common] == query[common]) ++common;
        scan = std::max(scan, common);
      }
      auto m = cache.Lookup(0, query.data(), static_cast<int>(query.size()));
      CHECK(m.length == scan);
      CHECK(m.length == 0 || (m.block != nullptr && m.block->length >= m.length));
    }
  });
  Test("prefix cache: a cleared block's memory goes back once its last holder lets go", [] {
    CountingDevice device;
    const auto shape = Shape();
    decide::PrefixCache cache(size_t{1} << 20);
    const std::vector<int32_t> a = {1, 2};
    auto block = Filled(&device, shape, 2, 0);
    cache.Insert(0, a.data(), 2, block);
    cache.Clear();
    CHECK(device.frees == 0);  // still held here, as by a running pass
    block.reset();
    CHECK(device.allocs == 1 && device.frees == 1);  // one allocation per block
  });
}

// Suffixes of `lengths` tokens for one group (prefix of `state` tokens), 2 labels each.
struct Input {
  std::vector<int32_t> prefix, prefix_offsets, suffix_tokens, suffix_offsets, suffix_group, labels, label_offsets;
  decide::ScoreInput in;
  Input(int state, const std::vector<int>& lengths) {
    prefix.assign(state, 7);
    prefix_offsets = {0, state};
    suffix_offsets = {0};
    label_offsets = {0};
    for (size_t s = 0; s < lengths.size(); ++s) {
      for (int i = 0; i < lengths[s]; ++i) suffix_tokens.push_back(static_cast<int32_t>(100 * s + i));
      suffix_offsets.push_back(static_cast<int32_t>(suffix_tokens.size()));
      suffix_group.push_back(0);
      labels.push_back(static_cast<int32_t>(s));
      labels.push_back(static_cast<int32_t>(s + 1));
      label_offsets.push_back(static_cast<int32_t>(labels.size()));
    }
    in.prefix_tokens = prefix.data();
    in.prefix_offsets = prefix_offsets.data();
    in.num_groups = 1;
    in.prefix_tokens_length = prefix.size();
    in.suffix_tokens = suffix_tokens.data();
    in.suffix_offsets = suffix_offsets.data();
    in.suffix_group = suffix_group.data();
    in.num_suffixes = static_cast<int>(lengths.size());
    in.suffix_tokens_length = suffix_tokens.size();
    in.label_ids = labels.data();
    in.label_offsets = label_offsets.data();
    in.label_ids_length = labels.size();
  }
};

void RowPackingTests() {
  decide::PackingLimits wide;
  wide.token_budget = 1 << 20;
  wide.attention_budget = int64_t{1} << 40;
  Test("row packing: a row grows to max(state, 64) question tokens, then a new row starts", [&] {
    Input input(100, {40, 40, 30, 10});
    auto rows = decide::PackGroups(input.in, wide);
    CHECK(rows.size() == 1);
    CHECK(rows[0].size() == 2);
    CHECK((rows[0][0] == std::vector<int>{0, 1}));
    CHECK((rows[0][1] == std::vector<int>{2, 3}));
    Input tiny(3, {30, 30, 30});  // a short state: the 64-token floor
    auto short_rows = decide::PackGroups(tiny.in, wide);
    CHECK(short_rows[0].size() == 2);
  });
  Test("row packing: the token budget cuts rows; a question never splits", [&] {
    decide::PackingLimits tight = wide;
    tight.token_budget = 50;
    Input input(1000, {30, 30, 60});
    auto rows = decide::PackGroups(input.in, tight);
    CHECK(rows[0].size() == 3);  // the 60-token question has a row of its own, over the budget
  });
  Test("row packing: a packed row's positions restart per question, segments count from 1", [&] {
    Input input(5, {2, 3});
    const int32_t lead[] = {7, 7};
    auto row = decide::MakePackedRow(input.in, lead, 2, {0, 1});
    CHECK((row.tokens == std::vector<int32_t>{7, 7, 0, 1, 100, 101, 102}));
    CHECK((row.offsets == std::vector<int32_t>{0, 1, 2, 3, 2, 3, 4}));
    CHECK((row.segments == std::vector<int32_t>{0, 0, 1, 1, 2, 2, 2}));
    CHECK((row.logits_positions == std::vector<int32_t>{3, 6}));
    CHECK(row.labels.size() == 2 && row.labels[1].count == 2 && row.labels[1].ids[0] == 1);
  });
}

std::vector<decide::ExtendRow> Rows(const std::vector<std::pair<int, int>>& past_and_new) {
  std::vector<decide::ExtendRow> rows;
  for (auto [past, fresh] : past_and_new) {
    decide::ExtendRow row;
    row.past_len = past;
    row.num_tokens = fresh;
    rows.push_back(row);
  }
  return rows;
}

// Planner limits that bound nothing but the tokens of a pass; a pass costs `overhead` tokens.
decide::PassLimits PlannerLimits(int64_t token_budget, double overhead) {
  decide::PassLimits limits;
  limits.token_budget = token_budget;
  limits.past_budget_bytes = int64_t{1} << 40;
  limits.attention_budget = int64_t{1} << 50;
  limits.kv_bytes_per_token = 8;
  limits.attention_weight = 0;
  limits.pass_overhead_tokens = overhead;
  return limits;
}

void PassPlannerTests() {
  decide::PassLimits limits = PlannerLimits(1000, 32);
  Test("pass planner: alike rows are one pass; every row is covered once, in order", [&] {
    auto passes = decide::PlanPasses(Rows({{0, 10}, {0, 10}, {0, 11}, {0, 12}}), limits);
    CHECK(passes.size() == 1);
    CHECK(passes[0].first == 0 && passes[0].second == 4);
  });
  Test("pass planner: short and long rows split where padding would cost more than a pass", [&] {
    auto passes = decide::PlanPasses(Rows({{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 200}}), limits);
    CHECK(passes.size() == 2);
    CHECK(passes[0].second == 4 && passes[1].first == 4);
    decide::PassLimits costly = limits;
    costly.pass_overhead_tokens = 1e30;  // "fewest passes"
    CHECK(decide::PlanPasses(Rows({{0, 2}, {0, 2}, {0, 2}, {0, 2}, {0, 200}}), costly).size() == 1);
  });
  Test("pass planner: budgets cut passes, and a row over every budget is still a pass", [&] {
    decide::PassLimits tight = limits;
    tight.token_budget = 25;
    auto passes = decide::PlanPasses(Rows({{0, 10}, {0, 10}, {0, 10}, {0, 10}}), tight);
    CHECK(passes.size() == 2);
    CHECK(decide::PlanPasses(Rows({{0, 100}}), tight).size() == 1);
    decide::PassLimits past = limits;
    past.past_budget_bytes = 8 * 100;
    CHECK(decide::PlanPasses(Rows({{60, 1}, {60, 1}}), past).size() == 2);
    decide::PassLimits logits = limits;
    logits.logits_bytes_per_token = 100;
    logits.logits_budget_bytes = 1500;
    CHECK(decide::PlanPasses(Rows({{0, 10}, {0, 10}}), logits).size() == 2);
  });
  Test("pass planner: a gathered head's wanted positions cut passes that every token budget lets through", [&] {
    // 12 short rows of one wanted position each, then one row of three: 15 positions in all.
    std::vector<decide::ExtendRow> rows = Rows({{0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}, {0, 3}});
    for (size_t r = 0; r < rows.size(); ++r) rows[r].logits_positions = r + 1 < rows.size() ? std::vector<int32_t>{2} : std::vector<int32_t>{0, 1, 2};
    decide::PassLimits gathered = limits;
    CHECK(decide::PlanPasses(rows, gathered).size() == 1);  // no logits bound: the tokens fit one pass
    gathered.logits_bytes_per_position = 100;
    gathered.logits_budget_bytes = 500;  // five positions a pass
    auto passes = decide::PlanPasses(rows, gathered);
    CHECK(passes.size() == 3);  // 5 + 5 + (1 + 1 + 3)
    for (const auto& [begin, end] : passes) {
      size_t positions = 0;
      for (size_t r = begin; r < end; ++r) positions += rows[r].logits_positions.size();
      CHECK(positions * 100 <= 500);
    }
    CHECK(passes.front().first == 0 && passes.back().second == rows.size());
    // A row over the bound alone is still a pass.
    gathered.logits_budget_bytes = 100;
    CHECK(decide::PlanPasses(rows, gathered).size() == rows.size());
  });
}

void ShapeBucketTests() {
  Test("shape buckets: 0..8 exact, then four steps per doubling, never more than 25% padding", [&] {
    const int64_t expected[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 10, 12, 12, 14, 14, 16, 16, 20};
    for (int64_t n = 0; n < 18; ++n) CHECK(decide::BucketUp(n) == expected[n]);
    bool bounded = true, monotone = true, fixed_point = true;
    int64_t previous = 0;
    for (int64_t n = 1; n <= 300000; ++n) {
      const int64_t b = decide::BucketUp(n);
      bounded = bounded && b >= n && 4 * b <= 5 * n;
      monotone = monotone && b >= previous;
      fixed_point = fixed_point && decide::BucketUp(b) == b;
      previous = b;
    }
    CHECK(bounded);
    CHECK(monotone);
    CHECK(fixed_point);
  });
  Test("shape buckets: few distinct shapes over a wide range", [&] {
    std::vector<int64_t> seen;
    for (int64_t n = 1; n <= 4096; ++n) {
      if (seen.empty() || seen.back() != decide::BucketUp(n)) seen.push_back(decide::BucketUp(n));
    }
    CHECK(seen.size() == 8 + 4 * 9);  // 1..8, then 4 per doubling up to 4096
  });
  Test("shape buckets: every dimension of a pass rounds up on its own", [&] {
    decide::PassShape exact;
    exact.rows = 9;
    exact.past_len = 0;
    exact.new_len = 390;
    exact.index_width = 3;
    exact.labels = 37;
    exact.positions = 17;
    const decide::PassShape b = decide::BucketPassShape(exact);
    CHECK(b.rows == 10 && b.past_len == 0 && b.new_len == 448 && b.index_width == 3 && b.labels == 40 && b.positions == 20);
    CHECK(decide::BucketPassShape(b) == b);
  });
  Test("pass planner: with shape buckets, budgets and costs count the padded pass", [&] {
    // 9 rows of 17 tokens fit the budget exactly, not as the 10 x 20 they run as.
    decide::PassLimits limits = PlannerLimits(9 * 17, 1e30);
    std::vector<decide::ExtendRow> rows = Rows({{0, 17}, {0, 17}, {0, 17}, {0, 17}, {0, 17}, {0, 17}, {0, 17}, {0, 17}, {0, 17}});
    CHECK(decide::PlanPasses(rows, limits).size() == 1);
    limits.shape_buckets = true;
    auto passes = decide::PlanPasses(rows, limits);
    CHECK(passes.size() == 2);
    bool within = true;
    for (auto [begin, end] : passes) within = within && decide::BucketUp(end - begin) * decide::BucketUp(17) <= limits.token_budget;
    CHECK(within);
  });
}

void LengthAlignmentTests() {
  Test("pass length multiple: past + new rounded up; the padding goes to a padded past, else to the new tokens", [&] {
    bool aligned = true, minimal = true, placed = true;
    for (int multiple : {1, 4, 8}) {
      for (bool past_padded : {false, true}) {
        for (int64_t past = 0; past < 40; ++past) {
          for (int64_t fresh = 1; fresh < 40; ++fresh) {
            const auto [p, n] = decide::AlignedLengths(past, fresh, multiple, past_padded);
            aligned = aligned && (p + n) % multiple == 0;
            minimal = minimal && p + n - (past + fresh) < multiple && p + n >= past + fresh;
            placed = placed && (past > 0 && past_padded ? n == fresh && p >= past : p == past && n >= fresh);
          }
        }
      }
    }
    CHECK(aligned);
    CHECK(minimal);
    CHECK(placed);
    using Lengths = std::pair<int64_t, int64_t>;
    CHECK((decide::AlignedLengths(390, 18, 8, true) == Lengths{390, 18}));
    CHECK((decide::AlignedLengths(391, 18, 8, true) == Lengths{398, 18}));
    // Every row's past fills the pass's: padding it would split each row's fork into a copy per head.
    CHECK((decide::AlignedLengths(391, 18, 8, false) == Lengths{391, 25}));
    CHECK((decide::AlignedLengths(0, 1601, 8, false) == Lengths{0, 1608}));
  });
  Test("pass length multiple: the planner pads a uniform past's passes in their new tokens, a padded past's in the past", [&] {
    // Two rows with pasts of 391 and 18 new tokens each: aligned to 8 that is 391 + 25 (uniform
    // pasts); with one past of 300, the pass's past is padded already: 398 + 18.
    decide::PassLimits limits = PlannerLimits(2 * 25, 1e30);
    limits.length_multiple = 8;
    std::vector<decide::ExtendRow> uniform = Rows({{391, 18}, {391, 18}});
    CHECK(decide::PlanPasses(uniform, limits).size() == 1);  // 2 x 25 new tokens fit the budget
    limits.token_budget = 2 * 25 - 1;
    CHECK(decide::PlanPasses(uniform, limits).size() == 2);
    std::vector<decide::ExtendRow> mixed = Rows({{300, 18}, {391, 18}});
    CHECK(decide::PlanPasses(mixed, limits).size() == 1);  // 2 x 18 new tokens: the padding is in the past
  });
  Test("pass length multiple: a split pass pads after its items, its state part unchanged; the planner budgets the aligned pass", [&] {
    decide::PassShape split;
    split.rows = 2;
    split.new_len = 13;
    split.state_len = 9;
    const decide::PassShape aligned = decide::AlignPassLength(split, 8, false);
    CHECK(aligned.new_len == 16 && aligned.state_len == 9 && aligned.past_len == 0 && aligned.rows == 2);
    // 4 rows of 14 new tokens fit a budget of 56, not as the 4 x 16 they run as when aligned to 8.
    decide::PassLimits limits = PlannerLimits(4 * 14, 1e30);
    std::vector<decide::ExtendRow> rows = Rows({{0, 14}, {0, 14}, {0, 14}, {0, 14}});
    CHECK(decide::PlanPasses(rows, limits).size() == 1);
    limits.length_multiple = 8;
    CHECK(decide::PlanPasses(rows, limits).size() == 2);
  });
}

void SplitPassTests() {
  Test("pass planner: a split pass costs its longest lead plus its longest items, and splits where that gap costs more than a pass", [&] {
    decide::PassLimits limits = PlannerLimits(1 << 30, 32);
    // Two rows with long states and short items, two with short states and long items: alike in
    // length (100 tokens), so one pass without the split; split, each pair wants its own pass
    // (together 90 + 90 = 180 tokens a row).
    std::vector<decide::ExtendRow> rows = Rows({{0, 100}, {0, 100}, {0, 100}, {0, 100}});
    const int leads[] = {90, 90, 10, 10};
    for (int i = 0; i < 4; ++i) rows[i].lead = leads[i];
    CHECK(decide::PlanPasses(rows, limits).size() == 1);
    limits.split_states = true;
    CHECK(decide::PlanPasses(rows, limits).size() == 2);
    // Rows without leads (or with a past) are never split.
    for (auto& row : rows) row.lead = 0;
    CHECK(decide::PlanPasses(rows, limits).size() == 1);
  });
}

void KvStoreTests() {
  const auto shape = Shape();
  Test("kv store: a fork is one batch of copies however many rows, padding zeroed in it", [&] {
    for (int rows_count : {8, 64}) {
      CountingDevice device;
      decide::KvStore kv(&device, shape);
      std::vector<std::shared_ptr<decide::KvBlock>> blocks;
      std::vector<decide::PastRef> rows;
      for (int r = 0; r < rows_count; ++r) {
        blocks.push_back(Filled(&device, shape, 5 + r % 3, static_cast<float>(r)));
        rows.push_back(decide::PastRef{blocks.back().get(), 3 + r % 4});  // a prefix of each block
      }
      const int before = device.batches;
      kv.ForkPast(rows, 6);
      CHECK(device.batches - before == 1);
      // Row r, layer 1, values, head 1: its past then zeros.
      const int r = rows_count - 1;
      const float* past = reinterpret_cast<const float*>(kv.PastBuffer(1, true)) + (r * shape.num_kv_heads + 1) * 6 * shape.head_dim;
      const float* src = reinterpret_cast<const float*>(blocks[r]->values[1]) + 1 * blocks[r]->length * shape.head_dim;
      bool same = true, zeros = true;
      for (int t = 0; t < 6; ++t) {
        for (int d = 0; d < shape.head_dim; ++d) {
          const float v = past[t * shape.head_dim + d];
          if (t < rows[r].length) same = same && v == src[t * shape.head_dim + d];
          else zeros = zeros && v == 0.0f;
        }
      }
      CHECK(same);
      CHECK(zeros);
    }
  });
  Test("kv store: a row whose past fills the pass's forks each layer and kind as one row, not one per head", [&] {
    CountingDevice device;
    decide::KvStore kv(&device, shape);
    // Blocks of exactly the pass's past length (their heads back to back, as the pass's are), and
    // one shorter, whose heads stay apart (a run per head) with its padding.
    auto full_a = Filled(&device, shape, 4, 1.0f), full_b = Filled(&device, shape, 4, 2.0f), shorter = Filled(&device, shape, 3, 3.0f);
    const size_t runs_before = device.runs_copied, rows_before = device.rows_copied;
    kv.ForkPast({decide::PastRef{full_a.get(), 4}, decide::PastRef{full_b.get(), 4}}, 4);
    const size_t buffers = 2 * shape.num_layers;
    CHECK(device.runs_copied - runs_before == 2 * buffers);
    CHECK(device.rows_copied - rows_before == 2 * buffers);  // one row per run: merged
    // The merged copy moved every head: row 1, layer 2, keys, last head equals its block.
    const size_t head_floats = 4 * shape.head_dim;
    const float* past = reinterpret_cast<const float*>(kv.PastBuffer(2, false)) + (1 * shape.num_kv_heads + shape.num_kv_heads - 1) * head_floats;
    const float* src = reinterpret_cast<const float*>(full_b->keys[2]) + (shape.num_kv_heads - 1) * head_floats;
    CHECK(std::equal(past, past + head_floats, src));
    const size_t rows_mid = device.rows_copied;
    kv.ForkPast({decide::PastRef{shorter.get(), 3}}, 4);
    // Per buffer: the heads' 3 positions (a run per head) and each head's padding (a run per head).
    CHECK(device.rows_copied - rows_mid == buffers * 2 * shape.num_kv_heads);
  });
  Test("kv store: a row's slice of the present tensors is its block, with no copy; copies read it back alike", [&] {
    CountingDevice device;
    decide::KvStore kv(&device, shape);
    // Present [B=2, kvh, P + S = 5, hd] per layer, values tagged by (layer, kind, row, head, position).
    const int batch = 2, total = 5;
    auto storage = std::make_shared<std::vector<float>>(2 * shape.num_layers * batch * shape.num_kv_heads * total * shape.head_dim);
    decide::PresentKv present;
    present.past_len = 0;
    present.new_len = total;
    const size_t layer_floats = static_cast<size_t>(batch) * shape.num_kv_heads * total * shape.head_dim;
    for (int l = 0; l < shape.num_layers; ++l) {
      for (int kind = 0; kind < 2; ++kind) {
        float* base = storage->data() + (2 * l + kind) * layer_floats;
        for (size_t i = 0; i < layer_floats; ++i) base[i] = static_cast<float>(l * 100000 + kind * 50000 + i);
        (kind == 0 ? present.keys : present.values).push_back(reinterpret_cast<const char*>(base));
      }
    }
    present.owner = storage;
    present.owner_bytes = storage->size() * sizeof(float);
    const int before = device.batches;
    auto view = kv.ViewRow(present, 1, 3);
    CHECK(device.batches == before);
    CHECK(view->length == 3 && view->head_pitch == 5);
    CHECK(view->Bytes() == shape.BytesPerToken() * 5);
    CHECK(view->owner_bytes == present.owner_bytes);
    // Forking the view gives what an owned copy of the same positions gives.
    auto owned = std::make_shared<decide::KvBlock>(&device, shape, 3);
    std::vector<CopyRun> runs;
    kv.AddNewKvCopy(runs, present, 1, 3, *owned, 0);
    kv.Submit(runs);
    kv.ForkPast({decide::PastRef{view.get(), 3}}, 3);
    std::vector<float> from_view(reinterpret_cast<const float*>(kv.PastBuffer(2, true)),
                                 reinterpret_cast<const float*>(kv.PastBuffer(2, true)) + shape.num_kv_heads * 3 * shape.head_dim);
    kv.ForkPast({decide::PastRef{owned.get(), 3}}, 3);
    const float* from_owned = reinterpret_cast<const float*>(kv.PastBuffer(2, true));
    CHECK(std::equal(from_view.begin(), from_view.end(), from_owned));
    CHECK(from_view[0] == static_cast<float>(2 * 100000 + 50000 + (1 * shape.num_kv_heads) * total * shape.head_dim));
    storage.reset();
    present.owner.reset();
    CHECK(view->owner.use_count() == 1);  // the view alone keeps the pass's memory
  });
}


// Releasing on a failed device never throws (a throw from a destructor ends the process: the
// CUDA-graphs bench died so at close, "terminate called after throwing an instance of
// decide::EngineError"), and a failure that names memory is not taken for a shortage.
void FailedDeviceTests() {
  Test("a failed device: waits report false, buffers and blocks release without a throw", [] {
    FailedDevice device;
    CHECK(!device.TrySynchronize());
    {
      decide::DeviceBuffer buffer(&device, 64);
      decide::DeviceBuffer moved(&device, 32);
      moved = std::move(buffer);  // releases the 32 bytes
      decide::HostStaging staging(&device);
      staging.Reserve(16);
      staging.Reserve(64);  // releases the 16 bytes
      auto block = std::make_shared<decide::KvBlock>(&device, Shape(), 3);
    }
    CHECK(device.free_attempts >= 5);
    CountingDevice healthy;
    CHECK(healthy.TrySynchronize());
  });
  Test("out of memory is told from other failures that name memory", [] {
    CHECK(decide::IsOutOfMemory("CUDA failure 2: out of memory ; GPU=0"));
    CHECK(decide::IsOutOfMemory("Failed to allocate memory for requested buffer of size 123"));
    CHECK(decide::IsOutOfMemory("std::bad_alloc"));
    CHECK(decide::IsOutOfMemory("Available memory of 0 is smaller than requested bytes of 4096"));
    CHECK(!decide::IsOutOfMemory("CUDA failure 700: an illegal memory access was encountered"));
    CHECK(!decide::IsOutOfMemory("Non-zero status code returned while running ReduceSum node"));
  });
}

// The engine's RowQuantize operator (ops/row_quantize_op.h) against the standard ops it replaces,
// computed the plain way: the same scale and the same q, bit for bit, with AVX-512 where this CPU
// has it and without.
void RowQuantizeTests() {
  const auto reference = [](const std::vector<float>& x, std::vector<std::uint8_t>& q) {
    float abs_max = 0.0f;
    for (float v : x) abs_max = std::max(abs_max, std::fabs(v));
    const float scale = std::max(abs_max * static_cast<float>(1.0 / 127.0), 1e-30f);
    q.resize(x.size());
    for (std::size_t i = 0; i < x.size(); i++) q[i] = static_cast<std::uint8_t>(std::nearbyint(x[i] / scale) + 128.0f);
    return scale;
  };
  Test("RowQuantize equals ReduceMax(Abs), Mul, Max, Div, Round, Add, Cast", [&] {
    std::uint32_t seed = 12345;
    const auto next = [&seed] {
      seed = seed * 1664525u + 1013904223u;
      return static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    };
    // Lengths around the 16-float vectors (tails), rows with outliers, halves of the scale (ties
    // round to even), a zero row and a tiny one (the 1e-30 floor).
    for (std::size_t k : {1u, 7u, 15u, 16u, 17u, 64u, 100u, 512u, 1536u}) {
      for (int variant = 0; variant < 5; variant++) {
        std::vector<float> x(k);
        for (float& v : x) v = next() * 3.0f;
        if (variant == 1) x[k / 2] = 40.0f;
        if (variant == 2) {
          std::vector<std::uint8_t> unused;
          const float scale = reference(x, unused);
          for (std::size_t i = 1; i < k; i++) x[i] = (static_cast<float>(static_cast<int>(i % 21) - 10) + 0.5f) * scale;
        }
        if (variant == 3) std::fill(x.begin(), x.end(), 0.0f);
        if (variant == 4) for (float& v : x) v *= 1e-33f;
        std::vector<std::uint8_t> expected;
        const float expected_scale = reference(x, expected);
        std::vector<std::uint8_t> q(k, 0), q_plain(k, 0);
        const float scale = decide::QuantizeRow(x.data(), k, q.data());
        const float scale_plain = decide::QuantizeRowWithoutSimd(x.data(), k, q_plain.data());
        CHECK(scale == expected_scale);
        CHECK(scale_plain == expected_scale);
        CHECK(q == expected);
        CHECK(q_plain == expected);
        CHECK(*std::min_element(q.begin(), q.end()) >= 1);
      }
    }
  });
}

// The engine's CUDA kernels (ops/device_kernels.cu), run by the host emulation
// (device_kernels_emulated.h), against the CPU kernels of the same operators (ops/fused_ops.h).
void DeviceKernelTests() {
  std::uint32_t seed = 777;
  const auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  };
  const auto max_diff = [](const std::vector<float>& a, const std::vector<float>& b) {
    float worst = 0.0f;
    for (size_t i = 0; i < a.size(); i++) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
  };
  using Half = Ort::Float16_t;
  const auto to_half = [](const std::vector<float>& x) {
    std::vector<dk_half> h(x.size());
    for (size_t i = 0; i < x.size(); i++) h[i].bits = Half(x[i]).val;
    return h;
  };
  const auto from_half = [](const std::vector<dk_half>& h) {
    std::vector<float> x(h.size());
    for (size_t i = 0; i < h.size(); i++) x[i] = Half::FromBits(h[i].bits).ToFloat();
    return x;
  };

  // head_dim 8 (one pair per lane, most lanes idle), 64, 128 (Qwen3), 130 (a lane holding a third
  // pair) and 512 (the most the kernel holds); 5 heads for 4 warps (a warp takes two).
  for (int head_dim : {8, 64, 128, 130, 512}) {
    Test("the CUDA HeadNormRotary kernel equals the CPU kernel, head_dim " + std::to_string(head_dim), [&] {
      decide::HeadNormRotaryShape shape;
      shape.tokens = 6;
      shape.q_heads = 3;
      shape.k_heads = 2;
      shape.head_dim = head_dim;
      shape.table_rows = 40;
      shape.epsilon = 1e-6f;
      const size_t half = static_cast<size_t>(head_dim / 2);
      std::vector<float> q(static_cast<size_t>(shape.tokens * shape.q_heads * head_dim));
      std::vector<float> k(static_cast<size_t>(shape.tokens * shape.k_heads * head_dim));
      std::vector<float> q_scale(static_cast<size_t>(head_dim)), k_scale(static_cast<size_t>(head_dim));
      std::vector<float> cos(static_cast<size_t>(shape.table_rows) * half), sin(cos.size());
      for (float& v : q) v = next() * 4.0f;
      for (float& v : k) v = next() * 4.0f;
      for (float& v : q_scale) v = 1.0f + next() * 0.5f;
      for (float& v : k_scale) v = 1.0f + next() * 0.5f;
      for (size_t i = 0; i < cos.size(); i++) {
        const float angle = next() * 3.14159f;
        cos[i] = std::cos(angle);
        sin[i] = std::sin(angle);
      }
      const std::vector<int64_t> positions = {0, 7, 39, 3, 3, 21};
      std::vector<float> q_cpu(q.size()), k_cpu(k.size()), q_gpu(q.size()), k_gpu(k.size());
      decide::HeadNormRotaryCpu<float>(shape, q.data(), k.data(), q_scale.data(), k_scale.data(), positions.data(), cos.data(), sin.data(),
                                       q_cpu.data(), k_cpu.data(), 0, shape.tokens);
      const dk_i64* pos = reinterpret_cast<const dk_i64*>(positions.data());
      dk_emulated::Launch(static_cast<int>(shape.tokens), 128, [&] {
        head_norm_rotary_f32(q.data(), k.data(), q_scale.data(), k_scale.data(), pos, cos.data(), sin.data(), q_gpu.data(), k_gpu.data(),
                             3, 2, head_dim, 1e-6f, 40, 1);
      });
      CHECK(max_diff(q_cpu, q_gpu) < 1e-5f);
      CHECK(max_diff(k_cpu, k_gpu) < 1e-5f);
      // The rows were normed: RMSNorm then a rotation keeps each row's mean square at mean(scale^2) only
      // when scale is 1; here a loose check that nothing was left unwritten.
      CHECK(std::all_of(q_gpu.begin(), q_gpu.end(), [](float v) { return std::isfinite(v); }));

      // fp16: the same, stored as halves, one rounding apart at most.
      std::vector<dk_half> q16 = to_half(q), k16 = to_half(k), qs16 = to_half(q_scale), ks16 = to_half(k_scale), c16 = to_half(cos), s16 = to_half(sin);
      std::vector<dk_half> q16_out(q.size()), k16_out(k.size());
      dk_emulated::Launch(static_cast<int>(shape.tokens), 128, [&] {
        head_norm_rotary_f16(q16.data(), k16.data(), qs16.data(), ks16.data(), pos, c16.data(), s16.data(), q16_out.data(), k16_out.data(), 3, 2,
                             head_dim, 1e-6f, 40, 1);
      });
      std::vector<Half> q16_cpu(q.size()), k16_cpu(k.size());
      decide::HeadNormRotaryCpu<Half>(shape, reinterpret_cast<const Half*>(q16.data()), reinterpret_cast<const Half*>(k16.data()),
                                      reinterpret_cast<const Half*>(qs16.data()), reinterpret_cast<const Half*>(ks16.data()), positions.data(),
                                      reinterpret_cast<const Half*>(c16.data()), reinterpret_cast<const Half*>(s16.data()), q16_cpu.data(),
                                      k16_cpu.data(), 0, shape.tokens);
      std::vector<float> q16_cpu_f(q.size());
      for (size_t i = 0; i < q.size(); i++) q16_cpu_f[i] = q16_cpu[i].ToFloat();
      CHECK(max_diff(q16_cpu_f, from_half(q16_out)) < 1e-2f);  // |values| < 10: within two fp16 steps

      // normalize 0 (families without q/k norms): only the scale and rotary, which keeps a row's
      // length when the scale is 1.
      shape.normalize = false;
      std::vector<float> ones(static_cast<size_t>(head_dim), 1.0f);
      decide::HeadNormRotaryCpu<float>(shape, q.data(), k.data(), ones.data(), ones.data(), positions.data(), cos.data(), sin.data(), q_cpu.data(),
                                       k_cpu.data(), 0, shape.tokens);
      dk_emulated::Launch(static_cast<int>(shape.tokens), 128, [&] {
        head_norm_rotary_f32(q.data(), k.data(), ones.data(), ones.data(), pos, cos.data(), sin.data(), q_gpu.data(), k_gpu.data(), 3, 2, head_dim,
                             1e-6f, 40, 0);
      });
      CHECK(max_diff(q_cpu, q_gpu) < 1e-5f);
      CHECK(max_diff(k_cpu, k_gpu) < 1e-5f);
      float length_in = 0.0f, length_out = 0.0f;
      for (int i = 0; i < head_dim; i++) length_in += q[static_cast<size_t>(i)] * q[static_cast<size_t>(i)], length_out += q_gpu[static_cast<size_t>(i)] * q_gpu[static_cast<size_t>(i)];
      CHECK(std::fabs(length_in - length_out) < 1e-3f * length_in);
    });
  }

  Test("the CUDA HeadNormRotary kernel clamps a position past its table to the last row", [&] {
    decide::HeadNormRotaryShape shape;
    shape.tokens = 2;
    shape.q_heads = 1;
    shape.k_heads = 1;
    shape.head_dim = 8;
    shape.table_rows = 4;
    shape.epsilon = 1e-6f;
    std::vector<float> q(16), k(16), scale(8, 1.0f), cos(16), sin(16);
    for (float& v : q) v = next();
    for (float& v : k) v = next();
    for (size_t i = 0; i < cos.size(); i++) cos[i] = std::cos(static_cast<float>(i)), sin[i] = std::sin(static_cast<float>(i));
    std::vector<float> q_out(16), k_out(16);
    const std::vector<int64_t> positions = {3, 1000};
    std::vector<float> q_token1(q.begin() + 8, q.end());
    dk_emulated::Launch(2, 128, [&] {
      head_norm_rotary_f32(q.data(), k.data(), scale.data(), scale.data(), reinterpret_cast<const dk_i64*>(positions.data()), cos.data(), sin.data(),
                           q_out.data(), k_out.data(), 1, 1, 8, 1e-6f, 4, 1);
    });
    std::vector<float> expected(16), expected_k(16);
    const std::vector<int64_t> clamped = {3, 3};
    decide::HeadNormRotaryCpu<float>(shape, q.data(), k.data(), scale.data(), scale.data(), clamped.data(), cos.data(), sin.data(),
                                     expected.data(), expected_k.data(), 0, 2);
    CHECK(max_diff(expected, q_out) < 1e-6f);
  });

  Test("the CUDA SiluMul kernels equal the CPU kernel (fp32, fp16, fp16 by eight)", [&] {
    const size_t count = 1000;  // more than the launch's threads: the grid-stride loop
    std::vector<float> gate(count), up(count), out(count), expected(count);
    for (float& v : gate) v = next() * 12.0f;
    for (float& v : up) v = next() * 3.0f;
    gate[0] = -100.0f;  // exp(100) overflows: SiLU is -0
    decide::SiluMulCpu<float>(gate.data(), up.data(), expected.data(), 0, count);
    CHECK(std::fabs(expected[0]) < 1e-30f);
    dk_emulated::Launch(2, 64, [&] { silu_mul_f32(gate.data(), up.data(), out.data(), static_cast<dk_i64>(count)); });
    CHECK(max_diff(expected, out) < 1e-5f);
    std::vector<dk_half> g16 = to_half(gate), u16 = to_half(up), o16(count), o16x8(count);
    std::vector<Half> expected16(count);
    decide::SiluMulCpu<Half>(reinterpret_cast<const Half*>(g16.data()), reinterpret_cast<const Half*>(u16.data()), expected16.data(), 0, count);
    std::vector<float> expected16_f(count);
    for (size_t i = 0; i < count; i++) expected16_f[i] = expected16[i].ToFloat();
    dk_emulated::Launch(2, 64, [&] { silu_mul_f16(g16.data(), u16.data(), o16.data(), static_cast<dk_i64>(count)); });
    dk_emulated::Launch(1, 32, [&] { silu_mul_f16x8(g16.data(), u16.data(), o16x8.data(), static_cast<dk_i64>(count / 8)); });
    CHECK(max_diff(expected16_f, from_half(o16)) == 0.0f);
    CHECK(max_diff(expected16_f, from_half(o16x8)) == 0.0f);
  });

  Test("NVRTC is looked for beside the provider's libcudart first, a named one alone", [] {
    using Names = std::vector<std::string>;
    CHECK(decide::NvrtcCandidates("/opt/nvrtc/libnvrtc.so.13", "/usr/local/cuda/lib64") == Names{"/opt/nvrtc/libnvrtc.so.13"});
    CHECK((decide::NvrtcCandidates("", "/usr/local/cuda/lib64") ==
           Names{"/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12", "libnvrtc.so.13",
                 "libnvrtc.so.12", "libnvrtc.so"}));
    CHECK((decide::NvrtcCandidates("", "") == Names{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
    // A CUDA 12 driver refuses NVRTC 13's code; with no driver (compile-only checks) any NVRTC does.
    CHECK(!decide::NvrtcFitsDriver(13, 12));
    CHECK(decide::NvrtcFitsDriver(12, 13));
    CHECK(decide::NvrtcFitsDriver(13, 13));
    CHECK(decide::NvrtcFitsDriver(13, 0));
  });

  // NVRTC compiles the kernels as CUDA where the host has it (DECIDE_NVRTC_LIBRARY names it): no
  // card needed. Elsewhere this check is skipped (test/gpu/ compiles them on a card).
  if (std::getenv("DECIDE_NVRTC_LIBRARY") != nullptr) {
    Test("NVRTC compiles the engine's CUDA kernels (sm_90 cubin, compute_75 PTX)", [] {
      CHECK(decide::CompileDeviceKernels("sm_90") > 1000);
      CHECK(decide::CompileDeviceKernels("compute_75") > 1000);
    });
  } else {
    std::cout << "skipped: NVRTC compile of the CUDA kernels (DECIDE_NVRTC_LIBRARY is not set)" << std::endl;
  }
}

}  // namespace

int main() {
  PrefixCacheTests();
  RowPackingTests();
  PassPlannerTests();
  ShapeBucketTests();
  LengthAlignmentTests();
  SplitPassTests();
  KvStoreTests();
  RowQuantizeTests();
  DeviceKernelTests();
  FailedDeviceTests();
  std::cout << g_passed << " passed, " << g_failed << " failed" << std::endl;
  return g_failed == 0 ? 0 : 1;
}
