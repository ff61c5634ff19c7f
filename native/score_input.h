// The flat form of one score call, as the binding receives it from JS: groups (a prefix each) and
// suffixes (a group, tokens and label ids each), in offset arrays.
// Ownership: the pointers point into JS typed arrays that the AsyncWorker keeps alive for the call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace decide {

struct ScoreInput {
  const int32_t* prefix_tokens = nullptr;
  const int32_t* prefix_offsets = nullptr;  // num_groups + 1
  // num_groups: each group's cache scope. A cached prefix is reused only by groups of its own scope
  // (the service gives each API key one, so no caller learns another's state from what is cached).
  const int32_t* prefix_scopes = nullptr;
  int num_groups = 0;
  size_t prefix_tokens_length = 0;
  const int32_t* suffix_tokens = nullptr;
  const int32_t* suffix_offsets = nullptr;  // num_suffixes + 1
  const int32_t* suffix_group = nullptr;    // num_suffixes
  int num_suffixes = 0;
  size_t suffix_tokens_length = 0;
  const int32_t* label_ids = nullptr;
  const int32_t* label_offsets = nullptr;  // num_suffixes + 1
  size_t label_ids_length = 0;
};

}  // namespace decide
