#pragma once
// FP8 E4M3 as checkpoints store it (safetensors "F8_E4M3", torch.float8_e4m3fn, the OCP FP8 "E4M3"):
// 1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits; no infinities, and S.1111.111 (0x7F,
// 0xFF) is NaN, so the largest value is 448. Every value is exact in f32.

#include <cmath>
#include <cstdint>
#include <limits>

namespace dcu {

inline float fp8_e4m3_to_f32(uint8_t b) {
  const int exponent = (b >> 3) & 0xF, mantissa = b & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormal: mantissa / 8 * 2^(1 - 7); normal: (1 + mantissa / 8) * 2^(exponent - 7).
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -9) : std::ldexp(float(8 + mantissa), exponent - 10);
  return (b & 0x80) ? -magnitude : magnitude;
}

}  // namespace dcu
