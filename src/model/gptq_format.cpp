// GPTQ (quant_method "gptq"), as AutoGPTQ / GPTQModel pack it (GPTQModel
// gptqmodel/nn_modules/qlinear/__init__.py pack_original; vLLM gptq.py create_weights):
//   qweight I32 [K / pf, N]: word r of column n holds k = pf r + i at bits [b i, b i + b), pf = 32 / b
//   qzeros  I32 [K / G, N / pf]: packed the same way along N
//   scales  F16 [K / G, N]
//   g_idx   I32 [K] (optional): the group of each input feature; k / G unless act-order (desc_act)
//   W[n, k] = scales[g, n] * (q[k, n] - z[g, n]),  g = g_idx[k]
// Checkpoint format "gptq" (v1) stores z - 1. GPTQModel converts a v1 word to v2 by adding 1 to every
// field as one integer add (0x11111111 for 4 bits, 0x01010101 for 8: gptqmodel/utils/model.py
// convert_gptq_v1_to_v2_format_module); the carry that add can make is how a v1 file holds z = 0, so the
// word is corrected before it is split. 4-bit gives Int4 with its zero points; 8-bit gives Int8 codes
// q - z (z = 128 when symmetric).

#include "model/format_decoding.h"

#include <fmt/format.h>

namespace dcu {

HostLinear decode_gptq(const ModuleTensors& m) {
  const int bits = m.quant.bits;
  const int pf = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int64_t N = m.N, K = m.K, G = m.group(), groups = K / G;
  const StoredTensor& qweight = m.need("qweight");
  if (N % pf != 0)
    m.fail_at(qweight, fmt::format("has N = {} output features, not a multiple of {} (qzeros packs {} to a word)", N,
                                   pf, pf));
  m.expect(qweight, {"I32"}, {K / pf, N});
  const StoredTensor& qzeros = m.need("qzeros");
  m.expect(qzeros, {"I32"}, {groups, N / pf});
  const StoredTensor& scales = m.need("scales");
  m.expect(scales, {"F16", "BF16", "F32"}, {groups, N});
  const StoredTensor* g_idx = m.find("g_idx");
  if (g_idx) m.expect(*g_idx, {"I32"}, {K});
  const GroupLayout layout = group_layout(m, G, g_idx);

  const uint32_t v1_offset = !m.quant.gptq_v1_zeros ? 0 : bits == 4 ? 0x11111111u : 0x01010101u;
  std::vector<uint8_t> zeros(size_t(N * groups));  // [N, groups]
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < N / pf; ++c) {
      const uint32_t word = u32_at(qzeros, size_t(g * (N / pf) + c)) + v1_offset;
      for (int i = 0; i < pf; ++i) zeros[size_t((c * pf + i) * groups + g)] = uint8_t((word >> (bits * i)) & mask);
    }
  std::vector<float> s(size_t(N * groups));  // [N, groups]
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n) s[size_t(n * groups + g)] = float_at(scales, size_t(g * N + n));

  if (bits == 4) {
    std::vector<uint8_t> q(size_t(N * K));  // [N, K]
    // 32 k (4 words) at a time (K is a multiple of 32), so that each row's writes fill a cache line.
#pragma omp parallel for schedule(static)
    for (int64_t r0 = 0; r0 < K / 8; r0 += 4)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t r = r0; r < r0 + 4; ++r) {
          const uint32_t word = u32_at(qweight, size_t(r * N + n));
          for (int i = 0; i < 8; ++i) q[size_t(n * K + r * 8 + i)] = uint8_t((word >> (4 * i)) & 0xF);
        }
    return int4_linear(m, layout, q, std::move(s), std::move(zeros));
  }
  std::vector<int8_t> q(size_t(N * K));  // [N, K]: q - z
  for (int64_t r = 0; r < K / pf; ++r)
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t word = u32_at(qweight, size_t(r * N + n));
      for (int i = 0; i < pf; ++i) {
        const int64_t k = r * pf + i;
        const int z = zeros[size_t(n * groups + layout.group_of[size_t(k)])];
        q[size_t(n * K + k)] = int8_code(int((word >> (8 * i)) & mask) - z, m, qweight, n, k);
      }
    }
  return int8_linear(m, layout, q, std::move(s));
}

}  // namespace dcu
