// Block FP8 (quant_method "fp8", weight_block_size [128, 128]), as Qwen's and DeepSeek's FP8 checkpoints
// store it (huggingface/transformers src/transformers/integrations/finegrained_fp8.py FP8Linear):
//   weight           F8_E4M3 [N, K]
//   weight_scale_inv F32 [ceil(N / 128), ceil(K / 128)]: despite its name a multiplier,
//   W[n, k] = fp8(weight[n, k]) * weight_scale_inv[n / 128, k / 128]
// decode_fp8_block keeps the bytes as they are (WeightFormat::Fp8, group 128: each block's multiplier
// repeated on its 128 rows). Backends without FP8 matmuls (gfx906) get fp8_as_int8's Int8 instead, with
// a scale per row and 128 k, as load-time int8 quantization makes it (quantize_rows: scale = max |W| /
// 127 over the group, code = round(W / scale), half to even), so |code * scale - W| <= scale / 2.
// A NaN weight (E4M3 0x7F / 0xFF) or a non-finite multiplier is an error.

#include "model/format_decoding.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/fp8_e4m3.h"
#include "model/quantize.h"

namespace dcu {

HostLinear decode_fp8_block(const ModuleTensors& m) {
  constexpr int64_t kBlock = 128;
  const int64_t N = m.N, K = m.K, G = m.group(), groups = K / G;
  DCU_CHECK(G == kBlock);
  const StoredTensor& weight = m.need("weight");
  m.expect(weight, {"F8_E4M3"}, {N, K});
  const StoredTensor& scale_inv = m.need("weight_scale_inv");
  const int64_t block_cols = (K + kBlock - 1) / kBlock;
  m.expect(scale_inv, {"F32", "BF16", "F16"}, {(N + kBlock - 1) / kBlock, block_cols});

  const auto* codes = static_cast<const uint8_t*>(weight.data);
  HostLinear h;
  h.format = WeightFormat::Fp8;
  h.rows = N, h.cols = K, h.group = G;
  h.codes.assign(codes, codes + N * K);
  h.scales.resize(size_t(N * groups));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float multiplier = float_at(scale_inv, size_t((n / kBlock) * block_cols + g));
      if (!std::isfinite(multiplier))
        m.fail_at(scale_inv,
                  fmt::format("gives rows {}.. and input features {}.. the multiplier {}", n, g * G, multiplier));
      h.scales[size_t(n * groups + g)] = multiplier;
    }
  for (int64_t i = 0; i < N * K; ++i)
    if (std::isnan(fp8_e4m3_to_f32(codes[i])))
      m.fail_at(weight, fmt::format("gives row {}, input feature {} the value nan (weight byte 0x{:02X})", i / K, i % K,
                                    codes[i]));
  return h;
}

HostLinear fp8_as_int8(const HostLinear& fp8) {
  DCU_CHECK(fp8.format == WeightFormat::Fp8 && fp8.k_order.empty() && fp8.group == 128);
  const int64_t K = fp8.cols, groups = fp8.groups_per_row();
  HostLinear h = make_host_linear(WeightFormat::Int8, fp8.rows, K, "FP8 weight");  // group 128 as well
  constexpr int64_t kRows = 64;  // dequantized a block of rows at a time
  std::vector<float> values(size_t(kRows * K));
  for (int64_t n0 = 0; n0 < fp8.rows; n0 += kRows) {
    const int64_t count = std::min(kRows, fp8.rows - n0);
    for (int64_t r = 0; r < count; ++r)
      for (int64_t k = 0; k < K; ++k)
        values[size_t(r * K + k)] = fp8.scales[size_t((n0 + r) * groups + k / fp8.group)] *
                                    fp8_e4m3_to_f32(fp8.codes[size_t((n0 + r) * K + k)]);
    quantize_rows(values.data(), DType::F32, n0, count, h);
  }
  return h;
}

}  // namespace dcu
