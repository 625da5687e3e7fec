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

// The E4M3 byte nearest to x, ties to even; |x| beyond 448 saturates to 448 (E4M3 has no infinity, and
// 0x7F would be NaN). NaN x is the caller's to exclude.
inline uint8_t fp8_e4m3_from_f32(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fmin(std::fabs(x), 448.0f);
  // The step of E4M3's values around a: 2^(exponent - 3) for a in [2^exponent, 2^(exponent + 1)),
  // and the subnormals' 2^-9 below 2^-6.
  const int exponent = a < 0x1p-6f ? -6 : std::ilogb(a);
  const float q = std::nearbyint(std::ldexp(a, 3 - exponent));  // multiples of the step; may reach 16
  if (exponent == -6 && q < 8.0f) return uint8_t(sign | int(q));  // subnormal (or zero): mantissa q
  // q in [8, 16]: 1.mmm x 2^exponent, or 16 x step = 2^(exponent + 1) after rounding up.
  const int e = q == 16.0f ? exponent + 1 : exponent, mantissa = q == 16.0f ? 0 : int(q) - 8;
  return uint8_t(sign | (e + 7) << 3 | mantissa);
}

}  // namespace dcu
