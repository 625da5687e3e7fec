#include "backend/linear.h"

#include <string>

#include "core/error.h"
#include "core/fp8_e4m3.h"

namespace dcu {

float Linear::at(int64_t n, int64_t k) const {
  switch (format) {
    case WeightFormat::Dense: return load_as_f32(weight.data, weight.dtype, size_t(n * in_features + k));
    case WeightFormat::Int8: {
      const float s = scales.as<float>()[n * groups_per_row() + k / group];
      return s * float(weight.as<int8_t>()[n * in_features + k]);
    }
    case WeightFormat::Int4: {
      const int64_t g = n * groups_per_row() + k / group;
      const int q = int4_code(weight.as<uint8_t>() + n * (in_features / 2), k);
      const int z = zeros.empty() ? 8 : zeros.as<uint8_t>()[g];
      return scales.as<float>()[g] * float(q - z);
    }
    case WeightFormat::Fp8: {
      const float s = scales.as<float>()[n * groups_per_row() + k / group];
      return s * fp8_e4m3_to_f32(weight.as<uint8_t>()[n * in_features + k]);
    }
  }
  return 0.0f;
}

Linear Linear::slice_rows(int64_t begin, int64_t count) const {
  Linear out = *this;
  out.weight = weight.slice_rows(begin, count);
  if (!scales.empty()) out.scales = scales.slice_rows(begin, count);
  if (!zeros.empty()) out.zeros = zeros.slice_rows(begin, count);
  return out;
}

void check_linear(const Linear& w, std::string_view what) {
  const int64_t N = w.weight.rows(), K = w.in_features;
  auto need = [&](bool ok, const std::string& why) {
    if (!ok) fail("{}: {} weight {}", what, weight_format_name(w.format), why);
  };
  need(w.weight.ndim == 2, "must be a matrix, is " + w.weight.shape_string());
  if (w.format == WeightFormat::Dense) {
    need(w.weight.dtype == DType::F32 || w.weight.dtype == DType::F16 || w.weight.dtype == DType::BF16,
         "must be F32, F16 or BF16");
    need(w.weight.cols() == K, "has " + std::to_string(w.weight.cols()) + " columns, not K = " + std::to_string(K));
    need(w.scales.empty() && w.zeros.empty(), "has scales");
    return;
  }
  need(w.group >= 32 && w.group % 32 == 0 && K % w.group == 0,
       "group " + std::to_string(w.group) + " must be a multiple of 32 dividing K = " + std::to_string(K));
  const bool int8 = w.format == WeightFormat::Int8;
  need(w.weight.dtype == (int8 ? DType::I8 : DType::U8), int8 ? "codes must be I8" : "codes must be U8");
  need(w.weight.cols() == w.code_bytes_per_row(), "codes have shape " + w.weight.shape_string());
  const int64_t groups = K / w.group;
  need(w.scales.dtype == DType::F32 && w.scales.rows() == N && w.scales.cols() == groups,
       "scales must be F32 [" + std::to_string(N) + ", " + std::to_string(groups) + "], are " +
           std::string(dtype_name(w.scales.dtype)) + " " + w.scales.shape_string());
  if (!w.k_order.empty())
    need(w.k_order.dtype == DType::I32 && w.k_order.numel() == K, "input order must be I32 [" + std::to_string(K) + "]");
  if (!w.zeros.empty()) {
    need(w.format == WeightFormat::Int4, "has zero points (only int4 codes have them)");
    need(w.zeros.dtype == DType::U8 && w.zeros.rows() == N && w.zeros.cols() == groups,
         "zero points must be U8 [" + std::to_string(N) + ", " + std::to_string(groups) + "]");
  }
}

}  // namespace dcu
