#pragma once
// Random quantized matrices (backend/linear.h layouts) for the matmul tests.

#include <random>

#include "model/host_linear.h"

namespace dcu::testing {

// An [N, K] matrix of `format` with random codes (FP8: any finite E4M3), scales in [0.001, 0.01) and, for int4 with
// `zero_points`, random zero points in 0..15 (else the symmetric 8).
inline HostLinear random_quantized(std::mt19937& rng, WeightFormat format, int64_t N, int64_t K, int64_t group,
                                   bool zero_points = false) {
  HostLinear h;
  h.format = format;
  h.rows = N, h.cols = K, h.group = group;
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  h.codes.resize(size_t(format == WeightFormat::Int4 ? N * K / 2 : N * K));
  for (auto& c : h.codes) c = uint8_t(byte(rng));
  if (format == WeightFormat::Fp8)  // every E4M3 byte but the NaNs (0x7F, 0xFF), subnormals included
    for (auto& c : h.codes)
      if ((c & 0x7F) == 0x7F) c ^= 1;
  h.scales.resize(size_t(N * (K / group)));
  for (auto& s : h.scales) s = scale(rng);
  if (zero_points) {
    h.zeros.resize(h.scales.size());
    for (auto& z : h.zeros) z = uint8_t(nibble(rng));
  }
  return h;
}

}  // namespace dcu::testing
