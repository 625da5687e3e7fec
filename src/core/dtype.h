#pragma once
// Element types and the scalar conversions between them (bf16/f16 <-> f32). I8 and U8 hold quantized
// weights (backend/linear.h), never activations.

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dcu {

enum class DType : uint8_t { F32, F16, BF16, I32, I8, U8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::I32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I8: return 1;
    case DType::U8: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::I32: return "I32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
  }
  return "?";
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

// IEEE half <-> single, exact for every half value (subnormals included), round-to-nearest-even down.
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while (!(mant & 0x400u)) { mant <<= 1; ++shift; }
    mant &= 0x3ffu;
    bits = sign | (uint32_t(113 - shift) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);          // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);         // overflow -> inf
  if (abs < 0x38800000u) {                                          // subnormal or zero
    if (abs < 0x33000000u) return sign;                             // rounds to zero
    uint32_t e = abs >> 23;
    uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                       // 14..24
    uint32_t half = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = ((abs >> 13) - (112u << 10));
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return uint16_t(sign | half);
}

// Reads element i of a row stored in `t` as f32.
inline float load_as_f32(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::F32: {  // memcpy: a safetensors offset need not be 4-byte aligned
      float v;
      std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(float), sizeof v);
      return v;
    }
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::F16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::I32: return float(static_cast<const int32_t*>(data)[i]);
    case DType::I8: return float(static_cast<const int8_t*>(data)[i]);
    case DType::U8: return float(static_cast<const uint8_t*>(data)[i]);
  }
  return 0.f;
}

}  // namespace dcu
