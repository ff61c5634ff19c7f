#include "shape_buckets.h"

namespace decide {

int64_t BucketUp(int64_t n) {
  if (n <= 4) return n;
  // n in (4 * 2^e, 8 * 2^e]: the first of 4, 5, 6, 7, 8 (times 2^e) at or above it.
  int64_t step = 1;
  while (8 * step < n) step *= 2;
  return (n + step - 1) / step * step;
}

PassShape BucketPassShape(const PassShape& exact) {
  PassShape shape;
  shape.rows = static_cast<int>(BucketUp(exact.rows));
  shape.past_len = static_cast<int>(BucketUp(exact.past_len));
  shape.new_len = static_cast<int>(BucketUp(exact.new_len));
  shape.index_width = static_cast<int>(BucketUp(exact.index_width));
  shape.labels = BucketUp(exact.labels);
  shape.positions = BucketUp(exact.positions);
  shape.one_dummy_index = exact.one_dummy_index;
  return shape;
}

std::pair<int64_t, int64_t> AlignedLengths(int64_t past_len, int64_t new_len, int multiple, bool past_padded) {
  if (multiple <= 1) return {past_len, new_len};
  const int64_t pad = (multiple - (past_len + new_len) % multiple) % multiple;
  return past_len > 0 && past_padded ? std::make_pair(past_len + pad, new_len) : std::make_pair(past_len, new_len + pad);
}

PassShape AlignPassLength(const PassShape& shape, int multiple, bool past_padded) {
  PassShape aligned = shape;
  const auto [past_len, new_len] = AlignedLengths(shape.past_len, shape.new_len, multiple, past_padded);
  aligned.past_len = static_cast<int>(past_len);
  aligned.new_len = static_cast<int>(new_len);
  return aligned;
}

}  // namespace decide
