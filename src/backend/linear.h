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
//         little-endian word whose nibble j (bits 4j..4j+3) holds k = 8w + 2j and nibble j + 4 holds
//         k = 8w + 2j + 1 (j < 4): even k in the low half-word, odd k in the high one, so that
//         (word >> 4j) & 0x000F000F puts the codes of k and k + 1 in the two 16-bit halves, which
//         becomes a pair of f16 / bf16 values with one more OR (the GPU kernels).
//   Fp8:  W[n, k] = scales[n, k / group] * e4m3(q[n, k]),  q an FP8 E4M3 byte (core/fp8_e4m3.h: bias 7,
//         3 mantissa bits, subnormals, no NaN codes), weight [N, K] U8. Block-FP8 checkpoints as shipped
//         (their 128 x 128 blocks as group 128, each block's scale repeated on its rows).

#include <cstdint>
#include <string_view>

#include "core/tensor.h"
#include "core/weight_format.h"

namespace dcu {

struct Linear {
  WeightFormat format = WeightFormat::Dense;
  Tensor weight;   // Dense [N, K] F32/F16/BF16; Int8 [N, K] I8; Int4 [N, K / 2] U8; Fp8 [N, K] U8
  Tensor scales;   // quantized: [N, K / group] F32
  Tensor zeros;    // Int4 with zero points: [N, K / group] U8; else empty
  // Act-order (GPTQ desc_act): [K] I32, canonical column j multiplies input feature k_order[j], so that
  // y = x[:, k_order] . W^T; empty: the identity. Backends gather the activations into that order.
  Tensor k_order;
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
  int64_t code_bytes_per_row() const { return format == WeightFormat::Int4 ? in_features / 2 : in_features; }
  // Bytes a matmul reads of it: codes, scales and zero points.
  size_t bytes() const { return weight.bytes() + scales.bytes() + zeros.bytes() + k_order.bytes(); }
  // The value of canonical column k of row n (host memory): W[n, k_order[k]] under act-order.
  float at(int64_t n, int64_t k) const;
  // Rows [begin, begin + count) as a Linear viewing the same memory.
  Linear slice_rows(int64_t begin, int64_t count) const;
};

// The nibble of a canonical Int4 word that holds k % 8 (the layout above).
constexpr int int4_nibble(int64_t k) { return int(k % 2) * 4 + int(k % 8) / 2; }

// Packs one row of K codes (0..15) into K / 2 bytes of the canonical Int4 layout.
inline void pack_int4_row(const uint8_t* q, int64_t K, uint8_t* out) {
  for (int64_t i = 0; i < K / 2; ++i) out[i] = 0;
  for (int64_t k = 0; k < K; ++k) {
    const int nibble = int4_nibble(k);
    out[(k / 8) * 4 + nibble / 2] |= uint8_t((q[k] & 0xF) << (4 * (nibble % 2)));
  }
}

// The code of column k of a packed Int4 row.
inline uint8_t int4_code(const uint8_t* packed_row, int64_t k) {
  const int nibble = int4_nibble(k);
  return (packed_row[(k / 8) * 4 + nibble / 2] >> (4 * (nibble % 2))) & 0xF;
}

// Checks that `w` is one of the layouts above (shapes, dtypes, group); throws dcu::Error naming `what`.
void check_linear(const Linear& w, std::string_view what);

}  // namespace dcu
