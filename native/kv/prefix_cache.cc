#include "prefix_cache.h"

#include <algorithm>

namespace decide {

PrefixCache::Match PrefixCache::Lookup(const int32_t* ids, int count) {
  Match best;
  auto best_it = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    int limit = std::min<int>(count, static_cast<int>(it->ids.size()));
    int common = 0;
    while (common < limit && it->ids[common] == ids[common]) ++common;
    if (common > best.length) {
      best.length = common;
      best.block = it->block;
      best_it = it;
      if (common == count) break;
    }
  }
  if (best_it != entries_.end()) entries_.splice(entries_.begin(), entries_, best_it);
  return best;
}

int PrefixCache::Insert(const int32_t* ids, int count, std::shared_ptr<KvBlock> block) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (static_cast<int>(it->ids.size()) == count && std::equal(ids, ids + count, it->ids.begin())) {
      entries_.splice(entries_.begin(), entries_, it);
      return 0;
    }
  }
  if (block->Bytes() > capacity_bytes_) return 0;
  bytes_ += block->Bytes();
  entries_.push_front(Entry{std::vector<int32_t>(ids, ids + count), std::move(block)});
  int evicted = 0;
  while (bytes_ > capacity_bytes_ && !entries_.empty()) {
    bytes_ -= entries_.back().block->Bytes();
    entries_.pop_back();
    ++evicted;
  }
  return evicted;
}

void PrefixCache::Clear() {
  entries_.clear();
  bytes_ = 0;
}

}  // namespace decide
