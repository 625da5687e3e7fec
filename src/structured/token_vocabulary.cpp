#include "structured/token_vocabulary.h"

#include <algorithm>

#include "core/error.h"

namespace dcu::structured {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes) : bytes_(std::move(token_bytes)) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (!bytes_[id].empty() && bytes_[id].size() < 65535) order.push_back(int32_t(id));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes_[size_t(a)] != bytes_[size_t(b)] ? bytes_[size_t(a)] < bytes_[size_t(b)] : a < b;
  });
  auto add_node = [&](uint8_t b, int depth) {
    byte_.push_back(b);
    depth_.push_back(uint16_t(depth));
    end_.push_back(0);
    tokens_begin_.push_back(int32_t(token_ids_.size()));
    max_depth_ = std::max(max_depth_, depth);
  };
  add_node(0, 0);
  std::vector<size_t> path{0};  // nodes of the previous token's bytes, root first
  const std::string* previous = nullptr;
  for (int32_t id : order) {
    const std::string& s = bytes_[size_t(id)];
    size_t common = 0;
    if (previous)
      while (common < s.size() && common < previous->size() && s[common] == (*previous)[common]) ++common;
    while (path.size() > common + 1) {
      end_[path.back()] = int32_t(byte_.size());
      path.pop_back();
    }
    for (size_t i = common; i < s.size(); ++i) {
      path.push_back(byte_.size());
      add_node(uint8_t(s[i]), int(i) + 1);
    }
    // Sorted order: the token's node is the newest one, so its tokens stay contiguous.
    DCU_CHECK(path.back() + 1 == byte_.size());
    token_ids_.push_back(id);
    previous = &s;
  }
  while (!path.empty()) {
    end_[path.back()] = int32_t(byte_.size());
    path.pop_back();
  }
  tokens_begin_.push_back(int32_t(token_ids_.size()));
}

}  // namespace dcu::structured
