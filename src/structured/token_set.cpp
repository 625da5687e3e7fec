#include "structured/token_set.h"

#include <bit>

namespace dcu::structured {

TokenSet::TokenSet(std::vector<uint32_t> bits, int vocab) : vocab_(vocab) {
  int count = 0;
  for (uint32_t w : bits) count += std::popcount(w);
  const int words = mask_words(vocab);
  if (count < words) {
    form_ = Form::Ids;
  } else if (vocab - count < words) {
    form_ = Form::Complement;
  } else {
    form_ = Form::Bits;
    bits_ = std::move(bits);
    return;
  }
  // Word by word, set bits only: the ids, or (complemented, past-the-end bits cleared) the ids left out.
  ids_.reserve(size_t(form_ == Form::Ids ? count : vocab - count));
  for (int i = 0; i < words; ++i) {
    uint32_t w = form_ == Form::Ids ? bits[size_t(i)] : ~bits[size_t(i)];
    if (i == words - 1 && vocab % 32) w &= (1u << (vocab % 32)) - 1;
    for (; w; w &= w - 1) ids_.push_back(32 * i + std::countr_zero(w));
  }
}

void TokenSet::write(std::span<uint32_t> mask) const {
  switch (form_) {
    case Form::Ids:
      for (int32_t id : ids_) mask[size_t(id >> 5)] |= 1u << (id & 31);
      return;
    case Form::Bits:
      for (size_t i = 0; i < bits_.size(); ++i) mask[i] |= bits_[i];
      return;
    case Form::Complement: {
      const int full = vocab_ / 32;
      for (int i = 0; i < full; ++i) mask[size_t(i)] = ~0u;
      if (vocab_ % 32) mask[size_t(full)] |= (1u << (vocab_ % 32)) - 1;
      for (int32_t id : ids_) mask[size_t(id >> 5)] &= ~(1u << (id & 31));
      return;
    }
  }
}

}  // namespace dcu::structured
