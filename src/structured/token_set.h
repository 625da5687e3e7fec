#pragma once
// A set of token ids stored the smallest way: the ids, the ids left out, or a bitset (xgrammar's
// adaptive mask cache). Written into a zeroed mask of one bit per token.

#include <cstdint>
#include <span>
#include <vector>

namespace dcu::structured {

class TokenSet {
 public:
  TokenSet() = default;
  // `bits`: one bit per token of a vocabulary of `vocab` tokens; bits past it are zero.
  TokenSet(std::vector<uint32_t> bits, int vocab);

  // Writes the set into `mask` (at least ceil(vocab / 32) words, all zero).
  void write(std::span<uint32_t> mask) const;
  size_t bytes() const { return 4 * (ids_.size() + bits_.size()); }

 private:
  enum class Form { Ids, Complement, Bits } form_ = Form::Ids;
  int vocab_ = 0;
  std::vector<int32_t> ids_;
  std::vector<uint32_t> bits_;
};

inline int mask_words(int vocab) { return (vocab + 31) / 32; }

}  // namespace dcu::structured
