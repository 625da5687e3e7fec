#pragma once
// A weight matrix as the matmul ops read it: y = x . W^T with W [N, K] (N output features, K input
// features), stored dense or quantized. Every backend picks its kernel by the format; checkpoint
// loaders and load-time quantization (model/quantize.h) produce these canonical layouts, so a new
// checkpoint format adds a loader, not a branch in the model code.
//
// Quantized formats store integer codes q with one f32 scale per group of `group` consecutive k in a
// row (group == K: one scale per output row):
//   Int8: W[n, k] = scales[n, k / group] * q[n, k],  q signed int8, weight [N, K] I8.
//   Int4: W[n, k] = scales[n, k / group] * (q[n, k] - z),  q in 0..15, z = zeros[n, k / group] (U8)
//         or 8 when zeros is empty (symmetric). weight [N, K / 2] U8: each run of 8 k is one 32-bit
//         word whose byte j holds k = 8w + j in its low nibble and k = 8w + j + 4 in its high nibble,
//         so that masking the word with 0x0F0F0F0F (or shifting it by 4 first) gives four codes of
//         consecutive k, one per byte.

#include <cstdint>
#include <string_view>

#include "core/tensor.h"

namespace dcu {

enum class WeightFormat : uint8_t { Dense, Int8, Int4 };

constexpr std::string_view weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::Dense: return "dense";
    case WeightFormat::Int8: return "int8";
    case WeightFormat::Int4: return "int4";
  }
  return "?";
}

struct Linear {
  WeightFormat format = WeightFormat::Dense;
  Tensor weight;   // Dense [N, K] F32/F16/BF16; Int8 [N, K] I8; Int4 [N, K / 2] U8
  Tensor scales;   // quantized: [N, K / group] F32
  Tensor zeros;    // Int4 with zero points: [N, K / group] U8; else empty
  int64_t in_features = 0;  // K
  int64_t group = 0;        // quantized: k per scale; a multiple of 32 dividing K

  Linear() = default;
  // A dense weight (implicit: every plain matrix is a Linear).
  Linear(const Tensor& dense) : weight(dense), in_features(dense.cols()) {}

  bool empty() const { return weight.empty(); }
  bool quantized() const { return format != WeightFormat::Dense; }
  int64_t rows() const { return weight.rows(); }  // N
  int64_t cols() const { return in_features; }    // K
  int64_t groups_per_row() const { return quantized() ? in_features / group : 0; }
  // Bytes a matmul reads of it: codes, scales and zero points.
  size_t bytes() const { return weight.bytes() + scales.bytes() + zeros.bytes(); }
  // The value of W[n, k] (host memory).
  float at(int64_t n, int64_t k) const;
  // Rows [begin, begin + count) as a Linear viewing the same memory.
  Linear slice_rows(int64_t begin, int64_t count) const;
};

// The canonical Int4 byte of codes q[8w + j] (low nibble) and q[8w + j + 4] (high nibble): packs one
// row of K codes (0..15) into K / 2 bytes.
inline void pack_int4_row(const uint8_t* q, int64_t K, uint8_t* out) {
  for (int64_t w = 0; w < K / 8; ++w)
    for (int j = 0; j < 4; ++j) out[4 * w + j] = uint8_t((q[8 * w + j] & 0xF) | (q[8 * w + j + 4] & 0xF) << 4);
}

// The code of column k of a packed Int4 row.
inline uint8_t int4_code(const uint8_t* packed_row, int64_t k) {
  const uint8_t byte = packed_row[(k / 8) * 4 + k % 4];
  return (k % 8) < 4 ? byte & 0xF : byte >> 4;
}

// Checks that `w` is one of the layouts above (shapes, dtypes, group); throws dcu::Error naming `what`.
void check_linear(const Linear& w, std::string_view what);

}  // namespace dcu
