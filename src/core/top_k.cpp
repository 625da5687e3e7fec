#include "core/top_k.h"

#include <algorithm>

namespace dcu {

// Small k: one pass with a k-entry heap (no row-sized copy); large k: select, then sort the selection.
std::vector<ValueId> top_entries(std::span<const float> row, int k) {
  k = std::clamp<int>(k, 0, int(row.size()));
  if (size_t(k) * 16 > row.size()) {
    std::vector<ValueId> all(row.size());
    for (size_t i = 0; i < row.size(); ++i) all[i] = {row[i], int32_t(i)};
    std::nth_element(all.begin(), all.begin() + k, all.end(), ranks_before);
    all.resize(size_t(k));
    std::sort(all.begin(), all.end(), ranks_before);
    return all;
  }
  std::vector<ValueId> heap;  // the k best so far; heap.front() is the worst of them
  heap.reserve(size_t(k));
  for (size_t i = 0; i < row.size() && k > 0; ++i) {
    const ValueId e{row[i], int32_t(i)};
    if (int(heap.size()) < k) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    } else if (ranks_before(e, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), ranks_before);
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end(), ranks_before);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), ranks_before);
  return heap;
}

}  // namespace dcu
