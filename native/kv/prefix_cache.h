// Bounded (bytes) LRU cache of prefix KV blocks, keyed by a scope and the prefix's token ids: a
// lookup matches only entries of its own scope (the key is the scope followed by the ids, so the
// scope is the key's first element and a match shorter than it is no match).
// Lookup returns the entry sharing the LONGEST common prefix with the query, so a new state still
// reuses the system-prompt part that every earlier state shares with it (the vocabulary is
// SGLang's: match / insert / evict). The keys are kept in lexicographic order: the key sharing
// the longest prefix with a query is one of the query's two neighbours in that order, so a lookup
// is O(log n) comparisons, not a scan. A small model's blocks are small, and the byte bound then
// holds tens of thousands of entries (a scan of them all per state cost more than the passes).
// The bound counts the memory the entries keep alive: an owned block its bytes; a view of a
// forward pass (kv_block.h) the whole pass's present tensors, once for all its views, since one
// view keeps them all (evicting every other state of the pass would otherwise free nothing).
// Thread: used only under the Scorer's compute lock.
#pragma once

#include <cstdint>
#include <list>
#include <map>
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

  Match Lookup(int32_t scope, const int32_t* ids, int count);
  // Inserts (or refreshes) the block for exactly this scope and these ids, then evicts least
  // recently used entries until the cache fits; returns how many it evicted (the caller counts
  // them). A block larger than the whole capacity is not kept.
  int Insert(int32_t scope, const int32_t* ids, int count, std::shared_ptr<KvBlock> block);
  void Clear();

  size_t Bytes() const { return bytes_; }
  size_t Capacity() const { return capacity_bytes_; }
  size_t Entries() const { return by_ids_.size(); }

 private:
  struct Entry;
  using Recency = std::list<std::map<std::vector<int32_t>, Entry>::iterator>;
  struct Entry {
    std::shared_ptr<KvBlock> block;
    Recency::iterator recent;  // its place in recency_
  };
  void Touch(std::map<std::vector<int32_t>, Entry>::iterator it);
  // The bytes holding `block` adds to the cache (a view's pass: only its first view), and that
  // letting it go frees (a view's pass: only its last).
  size_t Hold(const KvBlock& block);
  size_t Release(const KvBlock& block);

  struct Pass {
    size_t bytes = 0;
    int views = 0;
  };
  std::map<const void*, Pass> passes_;  // by owner: the views of each pass in the cache

  std::map<std::vector<int32_t>, Entry> by_ids_;  // lexicographic by {scope, token ids...}
  Recency recency_;                               // front: most recently used
  size_t capacity_bytes_;
  size_t bytes_ = 0;
};

}  // namespace decide
