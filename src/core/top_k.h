#pragma once
// The k largest entries of a row, the order every sampler and reference in the project agrees on:
// largest first, equal values by lower id.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dcu {

using ValueId = std::pair<float, int32_t>;

// True when a comes before b: larger value, or the same value and a lower id.
inline bool ranks_before(const ValueId& a, const ValueId& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// The min(k, row.size()) largest entries of `row` as (value, id), in that order.
std::vector<ValueId> top_entries(std::span<const float> row, int k);

}  // namespace dcu
