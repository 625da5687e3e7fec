#pragma once
// The part of a stored weight one tensor-parallel rank holds (model/sharding.h says which): row ranges
// of the leading dimension, concatenated, and a column range of the last dimension. The weight loader
// cuts dense tensors and decoded quantized matrices by it.

#include <cstdint>
#include <utility>
#include <vector>

namespace dcu {

struct Slice {
  std::vector<std::pair<int64_t, int64_t>> rows;  // (begin, count); empty: every row
  int64_t col_begin = 0, col_count = -1;          // -1: every column

  bool whole() const { return rows.empty() && col_count < 0; }
};

inline Slice row_slice(int64_t begin, int64_t count) { return Slice{{{begin, count}}}; }
inline Slice col_slice(int64_t begin, int64_t count) { return Slice{{}, begin, count}; }

}  // namespace dcu
