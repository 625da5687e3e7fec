#pragma once
// Grammar nodes for JSON numbers within bounds: integers in [lo, hi] without leading zeros, and
// decimals with whole-number bounds (inclusive or exclusive). Magnitudes stop at kMaxIntegerDigits
// digits, so no number runs on forever.

#include <cstdint>
#include <optional>

#include "structured/grammar.h"

namespace dcu::structured {

constexpr int kMaxIntegerDigits = 16;
constexpr int kMaxFractionDigits = 16;
constexpr int64_t kMaxMagnitude = 9'999'999'999'999'999;  // kMaxIntegerDigits nines

// Integers in [lo, hi] (clamped to +-kMaxMagnitude); Nothing when empty.
int integer_range(Grammar& g, int64_t lo, int64_t hi);

struct DecimalBound {
  int64_t value = 0;
  bool exclusive = false;
};

// Decimal numbers (no exponent) within the bounds; a missing bound is open.
int decimal_range(Grammar& g, std::optional<DecimalBound> lo, std::optional<DecimalBound> hi);

}  // namespace dcu::structured
