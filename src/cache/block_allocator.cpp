#include "cache/block_allocator.h"

#include "core/error.h"

namespace dcu {

IdPool::IdPool(int capacity) : capacity_(capacity) {
  free_.reserve(size_t(capacity));
  for (int i = capacity - 1; i >= 0; --i) free_.push_back(i);
}

std::optional<std::vector<int32_t>> IdPool::take(int count) {
  if (count > int(free_.size())) return std::nullopt;
  std::vector<int32_t> ids(free_.end() - count, free_.end());
  free_.resize(free_.size() - size_t(count));
  return ids;
}

std::optional<int32_t> IdPool::take_one() {
  if (free_.empty()) return std::nullopt;
  int32_t id = free_.back();
  free_.pop_back();
  return id;
}

void IdPool::give_back(const std::vector<int32_t>& ids) {
  for (int32_t id : ids) give_back(id);
}

void IdPool::give_back(int32_t id) {
  DCU_CHECK(id >= 0 && id < capacity_ && int(free_.size()) < capacity_);
  free_.push_back(id);
}

}  // namespace dcu
