#pragma once
// How a weight matrix is stored (backend/linear.h has the layouts). Its own header so that the GPU
// kernels, which build as C++17 without the rest of the backend headers, can name it.

#include <cstdint>
#include <string_view>

namespace dcu {

enum class WeightFormat : uint8_t { Dense, Int8, Int4, Fp8 };

constexpr std::string_view weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::Dense: return "dense";
    case WeightFormat::Int8: return "int8";
    case WeightFormat::Int4: return "int4";
    case WeightFormat::Fp8: return "fp8";
  }
  return "?";
}

// Integer codes (Int8, Int4): the formats whose matmuls may take int8-rounded activations
// (backend/activation_quantization.h). Fp8 values are not integers and keep their activations.
constexpr bool integer_codes(WeightFormat f) { return f == WeightFormat::Int8 || f == WeightFormat::Int4; }

}  // namespace dcu
