// The KV cache of one token sequence (a prefix): for every layer, key and value laid out
// [num_kv_heads, length, head_dim] in Device memory, so that the first m tokens of each head are
// contiguous and a block can serve as the past of any sequence that starts with its first m tokens.
// Immutable after it is filled; shared (shared_ptr) by the prefix cache and by in-flight score calls,
// so eviction never frees a block that a running forward pass still reads. One allocation holds
// every layer's keys and values (a call makes a block per state: one allocator call each, not one
// per layer and kind, since on CUDA each allocator call costs host time: docs/benchmark.md).
#pragma once

#include <cstddef>
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
  KvBlock(Device* device, const KvShape& shape, int length)
      : shape(shape), length(length), storage(device, shape.BytesPerToken() * static_cast<size_t>(length)) {
    const size_t layer_bytes = static_cast<size_t>(shape.num_kv_heads) * length * shape.head_dim * shape.elem_size;
    keys.reserve(shape.num_layers);
    values.reserve(shape.num_layers);
    for (int l = 0; l < shape.num_layers; ++l) {
      keys.push_back(storage.Data() + (2 * static_cast<size_t>(l)) * layer_bytes);
      values.push_back(storage.Data() + (2 * static_cast<size_t>(l) + 1) * layer_bytes);
    }
  }
  size_t Bytes() const { return shape.BytesPerToken() * length; }
  // Bytes of one head's run of `tokens` positions.
  size_t RunBytes(int tokens) const {
    return static_cast<size_t>(tokens) * shape.head_dim * shape.elem_size;
  }

  KvShape shape;
  int length;
  DeviceBuffer storage;
  std::vector<char*> keys;    // per layer, into storage
  std::vector<char*> values;  // per layer, into storage
};

}  // namespace decide
