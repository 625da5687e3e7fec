#pragma once
// A weight matrix in host memory in one of the canonical layouts of backend/linear.h: what checkpoint
// format decoders (model/checkpoint_formats.h) and load-time quantization (model/quantize.h) produce,
// before the loader slices it for a tensor-parallel rank and uploads it.

#include <cstdint>
#include <vector>

#include "backend/linear.h"

namespace dcu {

struct HostLinear {
  WeightFormat format = WeightFormat::Int8;
  int64_t rows = 0, cols = 0;   // N, K
  int64_t group = 0;            // k per scale (cols: one per row)
  std::vector<uint8_t> codes;   // Int8: [N, K] int8 bytes; Int4: [N, K / 2] packed (backend/linear.h)
  std::vector<float> scales;    // [N, K / group]
  std::vector<uint8_t> zeros;   // Int4 with zero points: [N, K / group] in 0..15; else empty
  // Optional [K]: canonical column j multiplies input feature k_order[j] (GPTQ act-order, whose groups
  // are not runs of consecutive k); empty: the identity.
  std::vector<int32_t> k_order;

  int64_t groups_per_row() const { return cols / group; }
};

}  // namespace dcu
