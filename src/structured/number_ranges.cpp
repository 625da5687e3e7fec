#include "structured/number_ranges.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dcu::structured {
namespace {

int digit_class(Grammar& g, char lo, char hi) { return g.chars({{uint32_t(lo), uint32_t(hi)}}); }

// Digit strings of one length between lo and hi (leading zeros allowed: these are suffixes).
int same_length(Grammar& g, const std::string& lo, const std::string& hi) {
  if (lo.empty()) return g.empty();
  if (lo == hi) return g.literal(lo);
  size_t i = 0;
  while (lo[i] == hi[i]) ++i;
  const std::string prefix = lo.substr(0, i);
  const size_t rest = lo.size() - i - 1;
  const std::string lo_tail = lo.substr(i + 1), hi_tail = hi.substr(i + 1);
  auto any_digits = [&](size_t n) { return g.repeat(digit_class(g, '0', '9'), int(n), int(n)); };
  if (lo_tail == std::string(rest, '0') && hi_tail == std::string(rest, '9'))
    return g.seq({g.literal(prefix), digit_class(g, lo[i], hi[i]), any_digits(rest)});
  std::vector<int> branches;
  branches.push_back(g.seq({g.literal(prefix + lo[i]), same_length(g, lo_tail, std::string(rest, '9'))}));
  if (lo[i] + 1 <= hi[i] - 1) branches.push_back(g.seq({g.literal(prefix), digit_class(g, char(lo[i] + 1), char(hi[i] - 1)), any_digits(rest)}));
  branches.push_back(g.seq({g.literal(prefix + hi[i]), same_length(g, std::string(rest, '0'), hi_tail)}));
  return g.alt(std::move(branches));
}

int64_t pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Non-negative integers in [lo, hi], written without leading zeros.
int natural_range(Grammar& g, int64_t lo, int64_t hi) {
  if (lo > hi) return g.nothing();
  std::vector<int> branches;
  for (int digits = 1; digits <= kMaxIntegerDigits; ++digits) {
    const int64_t first = digits == 1 ? 0 : pow10(digits - 1), last = pow10(digits) - 1;
    const int64_t a = std::max(lo, first), b = std::min(hi, last);
    if (a <= b) branches.push_back(same_length(g, std::to_string(a), std::to_string(b)));
  }
  return g.alt(std::move(branches));
}

int fraction(Grammar& g) { return g.seq({g.literal("."), g.repeat(digit_class(g, '0', '9'), 1, kMaxFractionDigits)}); }

int nonzero_fraction(Grammar& g) {
  return g.seq({g.literal("."), g.repeat(digit_class(g, '0', '9'), 0, kMaxFractionDigits - 1), digit_class(g, '1', '9')});
}

// Non-negative decimals m with lo <= m <= hi (each end possibly exclusive); hi absent: open.
int nonnegative_decimal(Grammar& g, DecimalBound lo, std::optional<DecimalBound> hi) {
  std::vector<int> branches;
  const int64_t top = hi ? std::min(hi->value, kMaxMagnitude) : kMaxMagnitude;
  const bool top_open = !hi || hi->value > kMaxMagnitude;
  // Whole part strictly inside: any fraction.
  const int64_t first = lo.exclusive ? lo.value + 1 : lo.value;
  const int64_t last = top_open ? kMaxMagnitude : top - 1;
  if (first <= last) branches.push_back(g.seq({natural_range(g, first, last), g.optional(fraction(g))}));
  // Whole part equal to an exclusive lower bound: a fraction above zero.
  if (lo.exclusive && (top_open || lo.value < top))
    branches.push_back(g.seq({g.literal(std::to_string(lo.value)), nonzero_fraction(g)}));
  // Exactly the upper bound.
  if (!top_open && !hi->exclusive && top >= lo.value && !(lo.exclusive && top == lo.value))
    branches.push_back(g.seq({g.literal(std::to_string(top)),
                              g.optional(g.seq({g.literal("."), g.repeat(g.literal("0"), 1, kMaxFractionDigits)}))}));
  return g.alt(std::move(branches));
}

}  // namespace

int integer_range(Grammar& g, int64_t lo, int64_t hi) {
  lo = std::max(lo, -kMaxMagnitude);
  hi = std::min(hi, kMaxMagnitude);
  if (lo > hi) return g.nothing();
  std::vector<int> branches;
  if (lo < 0) branches.push_back(g.seq({g.literal("-"), natural_range(g, std::max<int64_t>(1, hi < 0 ? -hi : 1), -lo)}));
  if (hi >= 0) branches.push_back(natural_range(g, std::max<int64_t>(0, lo), hi));
  return g.alt(std::move(branches));
}

int decimal_range(Grammar& g, std::optional<DecimalBound> lo, std::optional<DecimalBound> hi) {
  std::vector<int> branches;
  // x >= 0 part.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    DecimalBound floor{0, false};
    if (lo && lo->value >= 0) floor = *lo;
    branches.push_back(nonnegative_decimal(g, floor, hi));
  }
  // x < 0 part: m = -x > 0 with m >= -hi (hi < 0) and m <= -lo.
  if (!lo || lo->value < 0) {
    DecimalBound floor{0, true};
    if (hi && hi->value < 0) floor = {-hi->value, hi->exclusive};
    std::optional<DecimalBound> ceiling;
    if (lo) ceiling = DecimalBound{-lo->value, lo->exclusive};
    branches.push_back(g.seq({g.literal("-"), nonnegative_decimal(g, floor, ceiling)}));
  }
  return g.alt(std::move(branches));
}

}  // namespace dcu::structured
