// Bounded (bytes) LRU cache of prefix KV blocks, keyed by the prefix's token ids.
// Lookup returns the entry sharing the LONGEST common prefix with the query, so a new state still
// reuses the system-prompt part that every earlier state shares with it (the vocabulary is
// SGLang's: match / insert / evict). Entries are few (the byte bound keeps them to hundreds) and a
// linear scan is microseconds next to a forward pass, so no radix tree.
// Thread: used only under the Scorer's compute lock.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "kv_block.h"

namespace decide {

class PrefixCache {
 public:
  explicit PrefixCache(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  struct Match {
    std::shared_ptr<KvBlock> block;
    int length = 0;  // tokens of the query covered by block's first `length` positions
  };

  Match Lookup(const int32_t* ids, int count);
  // Inserts (or refreshes) the block for exactly these ids, then evicts least recently used entries
  // until the cache fits; returns how many it evicted (the caller counts them). A block larger than
  // the whole capacity is not kept.
  int Insert(const int32_t* ids, int count, std::shared_ptr<KvBlock> block);
  void Clear();

  size_t Bytes() const { return bytes_; }
  size_t Entries() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<int32_t> ids;
    std::shared_ptr<KvBlock> block;
  };
  std::list<Entry> entries_;  // front: most recently used
  size_t capacity_bytes_;
  size_t bytes_ = 0;
};

}  // namespace decide
