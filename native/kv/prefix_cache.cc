#include "prefix_cache.h"

#include <algorithm>

namespace decide {

namespace {

std::vector<int32_t> ScopedKey(int32_t scope, const int32_t* ids, int count) {
  std::vector<int32_t> key;
  key.reserve(static_cast<size_t>(count) + 1);
  key.push_back(scope);
  key.insert(key.end(), ids, ids + count);
  return key;
}

int CommonLength(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t limit = std::min(a.size(), b.size());
  size_t common = 0;
  while (common < limit && a[common] == b[common]) ++common;
  return static_cast<int>(common);
}

}  // namespace

void PrefixCache::Touch(std::map<std::vector<int32_t>, Entry>::iterator it) {
  recency_.splice(recency_.begin(), recency_, it->second.recent);
}

PrefixCache::Match PrefixCache::Lookup(int32_t scope, const int32_t* ids, int count) {
  if (by_ids_.empty()) return Match{};
  // The longest common prefix with any key is reached at a neighbour of the query in key order.
  const std::vector<int32_t> query = ScopedKey(scope, ids, count);
  auto after = by_ids_.lower_bound(query);
  auto best_it = by_ids_.end();
  int best = 0;  // common length of the keys, the scope included
  if (after != by_ids_.end()) {
    best = CommonLength(after->first, query);
    best_it = after;
  }
  if (after != by_ids_.begin()) {
    auto before = std::prev(after);
    const int common = CommonLength(before->first, query);
    if (common > best) {
      best = common;
      best_it = before;
    }
  }
  // Another scope's entry shares nothing (0); the scope alone matches no token (1).
  if (best <= 1) return Match{};
  Touch(best_it);
  return Match{best_it->second.block, best - 1};
}

int PrefixCache::Insert(int32_t scope, const int32_t* ids, int count, std::shared_ptr<KvBlock> block) {
  std::vector<int32_t> key = ScopedKey(scope, ids, count);
  auto found = by_ids_.find(key);
  if (found != by_ids_.end()) {
    Touch(found);
    return 0;
  }
  const size_t added = Hold(*block);
  if (added > capacity_bytes_) {
    Release(*block);
    return 0;
  }
  bytes_ += added;
  auto it = by_ids_.emplace(std::move(key), Entry{std::move(block), recency_.end()}).first;
  recency_.push_front(it);
  it->second.recent = recency_.begin();
  int evicted = 0;
  while (bytes_ > capacity_bytes_ && !recency_.empty()) {
    auto oldest = recency_.back();
    bytes_ -= Release(*oldest->second.block);
    recency_.pop_back();
    by_ids_.erase(oldest);
    ++evicted;
  }
  return evicted;
}

void PrefixCache::Clear() {
  recency_.clear();
  by_ids_.clear();
  passes_.clear();
  bytes_ = 0;
}

size_t PrefixCache::Hold(const KvBlock& block) {
  if (!block.owner) return block.Bytes();
  Pass& pass = passes_[block.owner.get()];
  if (pass.views++ > 0) return 0;
  pass.bytes = block.owner_bytes;
  return pass.bytes;
}

size_t PrefixCache::Release(const KvBlock& block) {
  if (!block.owner) return block.Bytes();
  auto found = passes_.find(block.owner.get());
  if (found == passes_.end() || --found->second.views > 0) return 0;
  const size_t freed = found->second.bytes;
  passes_.erase(found);
  return freed;
}

}  // namespace decide
