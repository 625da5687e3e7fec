// Block FP8 (quant_method "fp8", weight_block_size [128, 128]), as Qwen's and DeepSeek's FP8 checkpoints
// store it (huggingface/transformers src/transformers/integrations/finegrained_fp8.py FP8Linear):
//   weight           F8_E4M3 [N, K]
//   weight_scale_inv F32 [ceil(N / 128), ceil(K / 128)]: despite its name a multiplier,
//   W[n, k] = fp8(weight[n, k]) * weight_scale_inv[n / 128, k / 128]
// dcuserve's kernels read no FP8, so the blocks are requantized at load to Int8 with a scale per row and
// 128 k: scale = max |W| / 127 over the group, code = round(W / scale) (half to even, as torch.round),
// so |code * scale - W| <= scale / 2. An all-zero group gets scale 1 and codes 0. A NaN weight (E4M3
// 0x7F / 0xFF) is an error.

#include "model/format_decoding.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "model/fp8_e4m3.h"

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
  std::vector<int8_t> q(size_t(N * K));  // [N, K]
  std::vector<float> s(size_t(N * groups));
  std::vector<float> w(static_cast<size_t>(G));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float multiplier = float_at(scale_inv, size_t((n / kBlock) * block_cols + g));
      float amax = 0.0f;
      for (int64_t i = 0; i < G; ++i) {
        const int64_t k = g * G + i;
        w[size_t(i)] = fp8_e4m3_to_f32(codes[n * K + k]) * multiplier;
        if (!std::isfinite(w[size_t(i)]))
          m.fail_at(std::isnan(fp8_e4m3_to_f32(codes[n * K + k])) ? weight : scale_inv,
                    fmt::format("gives row {}, input feature {} the value {} (weight byte 0x{:02X}, multiplier {})", n, k,
                                w[size_t(i)], codes[n * K + k], multiplier));
        amax = std::max(amax, std::fabs(w[size_t(i)]));
      }
      const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
      s[size_t(n * groups + g)] = scale;
      for (int64_t i = 0; i < G; ++i)
        q[size_t(n * K + g * G + i)] = int8_t(std::clamp(std::nearbyint(w[size_t(i)] / scale), -127.0f, 127.0f));
    }
  return int8_linear(m, group_layout(m, G, nullptr), q, std::move(s));
}

}  // namespace dcu
