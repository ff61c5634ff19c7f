// The KV layout and every movement of it, in one place. Three layouts (all per layer, keys and
// values apart, heads outermost so a head's first m positions are contiguous):
//   KvBlock (kv_block.h)      [kv_heads, length, head_dim]      a prefix's KV, cached and shared
//   pass past (owned here)    [rows, kv_heads, P, head_dim]     a forward pass's past_key_values
//   present (ORT's outputs)   [rows, kv_heads, P + S, head_dim] the pass's KV, past and new
// and the movements, each issued as ONE batch of copies (Device::CopyBatch), never a call per
// row, layer or head: the fork of each row's past into the pass past (its padding zero-filled in
// the same batch), and, after a pass, the copy of a row's new KV (and of a cached prefix it
// extends) into the row's new KvBlock, where the row cannot simply keep its slice of the pass's
// present tensors as its block (ViewRow: no copy at all).
// Thread: used under the Scorer's compute lock. Ownership: the pass past buffers are owned here,
// grown on demand and reused by every pass (a fresh allocation of that size would be page-faulted
// again on every call on the CPU: docs/benchmark.md), and released before the Device (Release()).
#pragma once

#include <memory>
#include <vector>

#include "../device/device.h"
#include "kv_block.h"

namespace decide {

// One row's past in a pass: the first `length` positions of `block` (block may be null at 0).
struct PastRef {
  const KvBlock* block = nullptr;
  int length = 0;
};

// A pass's present tensors, read after the pass (device pointers, one per layer), and what keeps
// them alive.
struct PresentKv {
  std::vector<const char*> keys, values;
  int past_len = 0;  // P
  int new_len = 0;   // S
  std::shared_ptr<const void> owner;
  size_t owner_bytes = 0;  // what `owner` holds: every row's keys and values, all layers
};

class KvStore {
 public:
  KvStore(Device* device, const KvShape& shape) : device_(device), shape_(shape) {}

  const KvShape& Shape() const { return shape_; }

  // Fills the pass past for `rows` with the longest past `past_len`: row r's past at [0, len_r),
  // zeros on [len_r, past_len) (stale KV or fresh memory there could hold NaN, which the mask
  // would not absorb: 0 * NaN). One batch; nothing when past_len is 0.
  void ForkPast(const std::vector<PastRef>& rows, int past_len);
  // The pass past of layer `layer` (keys, or values) as laid out by the last ForkPast.
  char* PastBuffer(int layer, bool values) const { return past_[2 * layer + (values ? 1 : 0)].Data(); }
  size_t PastBytesPerBuffer(int rows, int past_len) const;

  // Row `row`'s first `count` positions of `present` as a block, with no copy: valid as a prefix
  // when the row's past is the pass's whole past (its past_len == P), so that its positions are
  // contiguous there. Null when `present` has no owner.
  std::shared_ptr<KvBlock> ViewRow(const PresentKv& present, int row, int count) const;
  // Appends to `runs` the copy of the first `count` positions of `src` into `dst`.
  void AddPrefixCopy(std::vector<CopyRun>& runs, const KvBlock& src, int count, KvBlock& dst) const;
  // Appends to `runs` the copy of row `row`'s first `count` new positions of `present` into `dst`
  // at [dst_start, dst_start + count).
  void AddNewKvCopy(std::vector<CopyRun>& runs, const PresentKv& present, int row, int count, KvBlock& dst,
                    int dst_start) const;
  // Issues `runs` as one batch.
  void Submit(const std::vector<CopyRun>& runs) const { device_->CopyBatch(runs); }

  void Release() { past_.clear(); }
  // How often a pass past buffer was reallocated (moved) since construction.
  uint64_t PastMoves() const { return past_moves_; }

 private:
  Device* device_;
  KvShape shape_;
  std::vector<DeviceBuffer> past_;  // 2 per layer: keys, values
  uint64_t past_moves_ = 0;
};

}  // namespace decide
