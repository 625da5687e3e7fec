// TokenSet: each of its three forms (few ids, few left out, a bitset) writes back exactly the set it
// was made from, including in the last, partial word of a vocabulary that is not a multiple of 32.

#include <gtest/gtest.h>

#include <random>

#include "structured/token_set.h"

namespace dcu::structured {
namespace {

std::vector<uint32_t> random_set(int vocab, double density, uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution in(density);
  std::vector<uint32_t> bits(size_t(mask_words(vocab)), 0);
  for (int id = 0; id < vocab; ++id)
    if (in(rng)) bits[size_t(id >> 5)] |= 1u << (id & 31);
  return bits;
}

TEST(TokenSet, EveryFormWritesBackItsSet) {
  const int vocab = 1000 * 32 + 7;
  // Densities that pick each form: ids (under one per word), a bitset, the complement.
  for (double density : {0.0, 0.01, 0.5, 0.99, 1.0}) {
    const auto bits = random_set(vocab, density, uint32_t(density * 100));
    const TokenSet set(bits, vocab);
    std::vector<uint32_t> mask(bits.size(), 0);
    set.write(mask);
    EXPECT_EQ(mask, bits) << "density " << density;
  }
}

TEST(TokenSet, SmallFormsAreSmall) {
  const int vocab = 64 * 32;
  EXPECT_LE(TokenSet(random_set(vocab, 0.005, 1), vocab).bytes(), 4u * 32);
  EXPECT_LE(TokenSet(random_set(vocab, 0.995, 2), vocab).bytes(), 4u * 32);
  EXPECT_EQ(TokenSet(random_set(vocab, 0.5, 3), vocab).bytes(), 4u * 64);
}

}  // namespace
}  // namespace dcu::structured
