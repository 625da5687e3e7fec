#pragma once
// The model's tokens as byte strings, in a flat trie (nodes in depth-first order, each knowing where
// its subtree ends) so a mask walk can skip every token under a rejected prefix in one step.
// Tokens with no bytes (special tokens, ids past the tokenizer) never match a grammar.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dcu::structured {

class TokenVocabulary {
 public:
  // token_bytes[id]: the bytes token `id` adds to the output; empty for tokens a grammar never allows.
  explicit TokenVocabulary(std::vector<std::string> token_bytes);

  int size() const { return int(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }

  // Trie node 0 is the root (no byte). A node's children follow it; its subtree ends at subtree_end.
  size_t node_count() const { return byte_.size(); }
  uint8_t byte(size_t node) const { return byte_[node]; }
  int depth(size_t node) const { return depth_[node]; }
  size_t subtree_end(size_t node) const { return size_t(end_[node]); }
  std::span<const int32_t> tokens(size_t node) const {
    return {token_ids_.data() + tokens_begin_[node], size_t(tokens_begin_[node + 1] - tokens_begin_[node])};
  }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<uint8_t> byte_;
  std::vector<uint16_t> depth_;
  std::vector<int32_t> end_;
  std::vector<int32_t> tokens_begin_;  // [nodes + 1]
  std::vector<int32_t> token_ids_;
  int max_depth_ = 0;
};

}  // namespace dcu::structured
