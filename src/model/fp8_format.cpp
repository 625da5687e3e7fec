// Block FP8 (quant_method "fp8", weight_block_size [128, 128]), as Qwen's and DeepSeek's FP8 checkpoints
// store it (huggingface/transformers src/transformers/integrations/finegrained_fp8.py FP8Linear):
//   weight           F8_E4M3 [N, K]
//   weight_scale_inv F32 [ceil(N / 128), ceil(K / 128)]: despite its name a multiplier,
//   W[n, k] = fp8(weight[n, k]) * weight_scale_inv[n / 128, k / 128]
// decode_fp8_block keeps the bytes as they are (WeightFormat::Fp8, group 128: each block's multiplier
// repeated on its 128 rows). Backends without FP8 matmuls (gfx906) get fp8_as_int8's Int8 instead, with
// a scale per row and 128 k: scale = max |W| / 127 over the group, code = round(W / scale) (half to
// even, as torch.round), so |code * scale - W| <= scale / 2; an all-zero group gets scale 1 and codes 0.
// A NaN weight (E4M3 0x7F / 0xFF) or a non-finite multiplier is an error.

#include "model/format_decoding.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/fp8_e4m3.h"

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
  DCU_CHECK(fp8.format == WeightFormat::Fp8 && fp8.k_order.empty());
  const int64_t K = fp8.cols, G = fp8.group, groups = fp8.groups_per_row();
  HostLinear h;
  h.format = WeightFormat::Int8;
  h.rows = fp8.rows, h.cols = K, h.group = G;
  h.codes.resize(fp8.codes.size());
  h.scales.resize(fp8.scales.size());
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < fp8.rows; ++n) {
    thread_local std::vector<float> w;
    w.resize(size_t(G));
    for (int64_t g = 0; g < groups; ++g) {
      const float multiplier = fp8.scales[size_t(n * groups + g)];
      float amax = 0.0f;
      for (int64_t i = 0; i < G; ++i) {
        w[size_t(i)] = fp8_e4m3_to_f32(fp8.codes[size_t(n * K + g * G + i)]) * multiplier;
        amax = std::max(amax, std::fabs(w[size_t(i)]));
      }
      const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
      h.scales[size_t(n * groups + g)] = scale;
      for (int64_t i = 0; i < G; ++i)
        h.codes[size_t(n * K + g * G + i)] =
            uint8_t(int8_t(std::clamp(std::nearbyint(w[size_t(i)] / scale), -127.0f, 127.0f)));
    }
  }
  return h;
}

}  // namespace dcu
