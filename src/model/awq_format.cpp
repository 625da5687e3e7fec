// AWQ GEMM (quant_method "awq", version "gemm"), as AutoAWQ packs it (casper-hansen/AutoAWQ
// awq/modules/linear/gemm.py WQLinear_GEMM.from_linear):
//   qweight I32 [K, N / 8]: nibble i of word c holds column n = 8 c + order[i], order = [0,2,4,6,1,3,5,7]
//   qzeros  I32 [K / G, N / 8]: the same interleave
//   scales  F16 [K / G, N]
//   W[n, k] = scales[k / G, n] * (q[k, n] - z[k / G, n])   (zero points as stored, no +1)
// Unpacking: column 8 c + j sits at bit 4 * [0,4,1,5,2,6,3,7][j] (vLLM awq_triton.py awq_dequantize).

#include "model/format_decoding.h"

#include <fmt/format.h>

namespace dcu {
namespace {

constexpr int kShift[8] = {0, 16, 4, 20, 8, 24, 12, 28};

}  // namespace

HostLinear decode_awq(const ModuleTensors& m) {
  const int64_t N = m.N, K = m.K, G = m.group(), groups = K / G;
  const StoredTensor& qweight = m.need("qweight");
  if (N % 8 != 0) m.fail_at(qweight, fmt::format("has N = {} output features, not a multiple of 8", N));
  m.expect(qweight, {"I32"}, {K, N / 8});
  const StoredTensor& qzeros = m.need("qzeros");
  m.expect(qzeros, {"I32"}, {groups, N / 8});
  const StoredTensor& scales = m.need("scales");
  m.expect(scales, {"F16", "BF16", "F32"}, {groups, N});

  std::vector<uint8_t> zeros(size_t(N * groups));  // [N, groups]
  std::vector<float> s(size_t(N * groups));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      zeros[size_t(n * groups + g)] = uint8_t((u32_at(qzeros, size_t(g * (N / 8) + n / 8)) >> kShift[n % 8]) & 0xF);
      s[size_t(n * groups + g)] = float_at(scales, size_t(g * N + n));
    }
  std::vector<uint8_t> q(size_t(N * K));  // [N, K]
  // 32 k at a time (K is a multiple of 32), so that each row's writes fill a cache line.
#pragma omp parallel for schedule(static)
  for (int64_t k0 = 0; k0 < K; k0 += 32)
    for (int64_t c = 0; c < N / 8; ++c)
      for (int64_t k = k0; k < k0 + 32; ++k) {
        const uint32_t word = u32_at(qweight, size_t(k * (N / 8) + c));
        for (int j = 0; j < 8; ++j) q[size_t((8 * c + j) * K + k)] = uint8_t((word >> kShift[j]) & 0xF);
      }
  return int4_linear(m, group_layout(m, G, nullptr), q, std::move(s), std::move(zeros));
}

}  // namespace dcu
