#pragma once
// Code point ranges as UTF-8 byte-range sequences: [lo, hi] becomes a few sequences of 1-4 byte
// ranges whose concatenations are exactly the encodings of the range (surrogates left out).

#include <cstdint>
#include <string>
#include <vector>

#include "structured/grammar.h"

namespace dcu::structured {

struct ByteRange {
  uint8_t lo = 0, hi = 0;
};

using Utf8Sequence = std::vector<ByteRange>;

std::vector<Utf8Sequence> utf8_sequences(CodeRange range);

// Appends the UTF-8 encoding of `cp` (a valid scalar value).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace dcu::structured
