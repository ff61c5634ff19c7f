// The KV cache of one token sequence (a prefix): for every layer, key and value laid out
// [num_kv_heads, length, head_dim] in Device memory, so that the first m tokens of each head are
// contiguous and a block can serve as the past of any sequence that starts with its first m tokens.
// Immutable after it is filled; shared (shared_ptr) by the prefix cache and by in-flight score calls,
// so eviction never frees a block that a running forward pass still reads.
// Two kinds, read alike (keys[l] / values[l] and a head pitch):
//   - owned: one allocation holds every layer's keys and values (one allocator call per block:
//     on CUDA each allocator call costs host time, docs/benchmark.md);
//   - a view of the forward pass that computed it: row r's slice of the pass's present tensors,
//     heads `head_pitch` positions apart (the pass's P + S), kept alive by `owner`. A state computed
//     in a pass is then stored with no copy at all; the pass's memory (`owner_bytes`, every row)
//     is held until every view of it is gone, and the prefix cache counts it so, once per pass.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "../device/device.h"

namespace decide {

struct KvShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  size_t elem_size = 4;  // 4 for fp32 KV, 2 for fp16 KV

  size_t BytesPerToken() const {
    return static_cast<size_t>(num_layers) * 2 * num_kv_heads * head_dim * elem_size;
  }
};

struct KvBlock {
  // An owned block.
  KvBlock(Device* device, const KvShape& shape, int length)
      : shape(shape), length(length), head_pitch(length), storage(device, shape.BytesPerToken() * static_cast<size_t>(length)) {
    const size_t layer_bytes = static_cast<size_t>(shape.num_kv_heads) * length * shape.head_dim * shape.elem_size;
    keys.reserve(shape.num_layers);
    values.reserve(shape.num_layers);
    for (int l = 0; l < shape.num_layers; ++l) {
      keys.push_back(storage.Data() + (2 * static_cast<size_t>(l)) * layer_bytes);
      values.push_back(storage.Data() + (2 * static_cast<size_t>(l) + 1) * layer_bytes);
    }
  }
  // A view of memory that `owner` keeps alive: per layer, heads `head_pitch` positions apart.
  KvBlock(const KvShape& shape, int length, int head_pitch, std::vector<char*> keys, std::vector<char*> values,
          std::shared_ptr<const void> owner, size_t owner_bytes)
      : shape(shape), length(length), head_pitch(head_pitch), keys(std::move(keys)), values(std::move(values)),
        owner(std::move(owner)), owner_bytes(owner_bytes) {}

  // The device memory this block holds (a view: its row's whole slice of the pass).
  size_t Bytes() const { return shape.BytesPerToken() * head_pitch; }
  // Bytes of one head's run of `tokens` positions.
  size_t RunBytes(int tokens) const {
    return static_cast<size_t>(tokens) * shape.head_dim * shape.elem_size;
  }
  // Bytes from one head's first position to the next head's.
  size_t HeadPitchBytes() const { return RunBytes(head_pitch); }

  KvShape shape;
  int length;
  int head_pitch;
  DeviceBuffer storage;       // owned blocks only
  std::vector<char*> keys;    // per layer
  std::vector<char*> values;  // per layer
  std::shared_ptr<const void> owner;  // views only
  size_t owner_bytes = 0;             // views only: all the memory `owner` keeps alive
};

}  // namespace decide
