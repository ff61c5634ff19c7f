#include "kv_store.h"

namespace decide {

size_t KvStore::PastBytesPerBuffer(int rows, int past_len) const {
  return static_cast<size_t>(rows) * shape_.num_kv_heads * past_len * shape_.head_dim * shape_.elem_size;
}

void KvStore::ForkPast(const std::vector<PastRef>& rows, int past_len) {
  const int buffers = 2 * shape_.num_layers;
  const size_t buffer_bytes = PastBytesPerBuffer(static_cast<int>(rows.size()), past_len);
  if (past_.size() != static_cast<size_t>(buffers)) past_.resize(buffers);
  bool moved = false;
  for (DeviceBuffer& buffer : past_) {
    if (buffer.Bytes() < buffer_bytes) {
      buffer = DeviceBuffer(device_, buffer_bytes);
      moved = true;
    }
  }
  if (moved) ++past_moves_;
  if (buffer_bytes == 0) return;
  const size_t token_bytes = static_cast<size_t>(shape_.head_dim) * shape_.elem_size;
  const size_t run_bytes = static_cast<size_t>(past_len) * token_bytes;  // one head's run in the pass past
  std::vector<CopyRun> runs;
  runs.reserve(rows.size() * buffers * 2);
  for (int b = 0; b < buffers; ++b) {
    const int layer = b / 2;
    char* base = past_[b].Data();
    for (size_t r = 0; r < rows.size(); ++r) {
      const PastRef& row = rows[r];
      char* dst = base + r * shape_.num_kv_heads * run_bytes;
      const size_t copied = static_cast<size_t>(row.length) * token_bytes;
      if (row.length > 0) {
        const char* src = b % 2 == 0 ? row.block->keys[layer] : row.block->values[layer];
        runs.push_back(CopyRun{dst, run_bytes, src, row.block->HeadPitchBytes(), copied,
                               static_cast<size_t>(shape_.num_kv_heads)});
      }
      if (copied == run_bytes) continue;
      if (copied == 0) {
        // The row's whole slice is padding: one contiguous run.
        runs.push_back(CopyRun{dst, 0, nullptr, 0, shape_.num_kv_heads * run_bytes, 1});
      } else {
        runs.push_back(CopyRun{dst + copied, run_bytes, nullptr, 0, run_bytes - copied,
                               static_cast<size_t>(shape_.num_kv_heads)});
      }
    }
  }
  device_->CopyBatch(runs);
}

void KvStore::AddPrefixCopy(std::vector<CopyRun>& runs, const KvBlock& src, int count, KvBlock& dst) const {
  if (count <= 0) return;
  for (int l = 0; l < shape_.num_layers; ++l) {
    runs.push_back(CopyRun{dst.keys[l], dst.HeadPitchBytes(), src.keys[l], src.HeadPitchBytes(),
                           src.RunBytes(count), static_cast<size_t>(shape_.num_kv_heads)});
    runs.push_back(CopyRun{dst.values[l], dst.HeadPitchBytes(), src.values[l],
                           src.HeadPitchBytes(), src.RunBytes(count), static_cast<size_t>(shape_.num_kv_heads)});
  }
}

std::shared_ptr<KvBlock> KvStore::ViewRow(const PresentKv& present, int row, int count) const {
  if (!present.owner || count <= 0 || count > present.past_len + present.new_len) return nullptr;
  const size_t token_bytes = static_cast<size_t>(shape_.head_dim) * shape_.elem_size;
  const int pitch = present.past_len + present.new_len;
  const size_t offset = static_cast<size_t>(row) * shape_.num_kv_heads * pitch * token_bytes;
  std::vector<char*> keys, values;
  keys.reserve(shape_.num_layers);
  values.reserve(shape_.num_layers);
  for (int l = 0; l < shape_.num_layers; ++l) {
    // The present tensors are ORT's outputs: read-only to us, like every KvBlock after it is filled.
    keys.push_back(const_cast<char*>(present.keys[l]) + offset);
    values.push_back(const_cast<char*>(present.values[l]) + offset);
  }
  return std::make_shared<KvBlock>(shape_, count, pitch, std::move(keys), std::move(values), present.owner, present.owner_bytes);
}

void KvStore::AddNewKvCopy(std::vector<CopyRun>& runs, const PresentKv& present, int row, int count, KvBlock& dst,
                           int dst_start) const {
  if (count <= 0) return;
  const size_t token_bytes = static_cast<size_t>(shape_.head_dim) * shape_.elem_size;
  const size_t total_len = static_cast<size_t>(present.past_len) + present.new_len;
  const size_t offset = (static_cast<size_t>(row) * shape_.num_kv_heads * total_len + present.past_len) * token_bytes;
  for (int l = 0; l < shape_.num_layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      const char* src = (which == 0 ? present.keys[l] : present.values[l]) + offset;
      char* out = which == 0 ? dst.keys[l] : dst.values[l];
      runs.push_back(CopyRun{out + static_cast<size_t>(dst_start) * token_bytes, dst.HeadPitchBytes(), src,
                             total_len * token_bytes, static_cast<size_t>(count) * token_bytes,
                             static_cast<size_t>(shape_.num_kv_heads)});
    }
  }
}

}  // namespace decide
