#include "prefix_cache.h"

#include <algorithm>

namespace decide {

namespace {

int CommonLength(const std::vector<int32_t>& key, const int32_t* ids, int count) {
  const int limit = std::min<int>(count, static_cast<int>(key.size()));
  int common = 0;
  while (common < limit && key[common] == ids[common]) ++common;
  return common;
}

}  // namespace

void PrefixCache::Touch(std::map<std::vector<int32_t>, Entry>::iterator it) {
  recency_.splice(recency_.begin(), recency_, it->second.recent);
}

PrefixCache::Match PrefixCache::Lookup(const int32_t* ids, int count) {
  Match best;
  if (by_ids_.empty()) return best;
  // The longest common prefix with any key is reached at a neighbour of the query in key order.
  const std::vector<int32_t> query(ids, ids + count);
  auto after = by_ids_.lower_bound(query);
  auto best_it = by_ids_.end();
  if (after != by_ids_.end()) {
    best.length = CommonLength(after->first, ids, count);
    best_it = after;
  }
  if (after != by_ids_.begin()) {
    auto before = std::prev(after);
    const int common = CommonLength(before->first, ids, count);
    if (common > best.length) {
      best.length = common;
      best_it = before;
    }
  }
  if (best.length == 0) return Match{};
  best.block = best_it->second.block;
  Touch(best_it);
  return best;
}

int PrefixCache::Insert(const int32_t* ids, int count, std::shared_ptr<KvBlock> block) {
  std::vector<int32_t> key(ids, ids + count);
  auto found = by_ids_.find(key);
  if (found != by_ids_.end()) {
    Touch(found);
    return 0;
  }
  if (block->Bytes() > capacity_bytes_) return 0;
  bytes_ += block->Bytes();
  auto it = by_ids_.emplace(std::move(key), Entry{std::move(block), recency_.end()}).first;
  recency_.push_front(it);
  it->second.recent = recency_.begin();
  int evicted = 0;
  while (bytes_ > capacity_bytes_ && !recency_.empty()) {
    auto oldest = recency_.back();
    bytes_ -= oldest->second.block->Bytes();
    recency_.pop_back();
    by_ids_.erase(oldest);
    ++evicted;
  }
  return evicted;
}

void PrefixCache::Clear() {
  recency_.clear();
  by_ids_.clear();
  bytes_ = 0;
}

}  // namespace decide
