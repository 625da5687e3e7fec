#pragma once
// A pool of interchangeable ids (KV pages or GDN state slots) handed out and returned whole.

#include <cstdint>
#include <optional>
#include <vector>

namespace dcu {

class IdPool {
 public:
  explicit IdPool(int capacity);
  // `count` ids, or nullopt (and nothing taken) when fewer are free.
  std::optional<std::vector<int32_t>> take(int count);
  std::optional<int32_t> take_one();
  void give_back(const std::vector<int32_t>& ids);
  void give_back(int32_t id);
  int free_count() const { return int(free_.size()); }
  int capacity() const { return capacity_; }

 private:
  int capacity_;
  std::vector<int32_t> free_;  // a stack: recently freed ids are reused first
};

}  // namespace dcu
