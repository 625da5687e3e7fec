// compressed-tensors (quant_method "compressed-tensors"), as neuralmagic/compressed-tensors writes it.
//
// pack-quantized (src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py,
// pack_to_int32 / unpack_from_int32), b = 4 or 8 bits, pf = 32 / b:
//   weight_packed     I32 [N, ceil(K / pf)]: word c of row n holds k = pf c + i at bits [b i, b i + b),
//                     each signed q (-2^(b-1)..2^(b-1)-1) stored as q + 2^(b-1)
//   weight_shape      I32/I64 [2] = [N, K]
//   weight_scale      [N, K / G] (BF16/F16/F32; [N, 1] for strategy "channel")
//   weight_zero_point I32 [ceil(N / pf), K / G] (asymmetric only): packed along N the same way
//   weight_g_idx      I32 [K] (optional, actorder "group")
//   W[n, k] = weight_scale[n, g] * (q - zp)
// For 4 bits the stored nibbles q + 8 and zp + 8 are exactly the canonical Int4 code and zero point.
//
// int-quantized / naive-quantized (quantized_compressors/naive_quantized.py): weight I8 [N, K],
// weight_scale [N, K / G], optional weight_zero_point I8 [N, K / G] and weight_g_idx I32 [K].
//
// Static activation scales (input_scale, input_zero_point) are not read: activations stay f16/bf16.

#include "model/format_decoding.h"

#include <cstring>

#include <fmt/format.h>

namespace dcu {
namespace {

void check_weight_shape(const ModuleTensors& m) {
  const StoredTensor& t = m.need("weight_shape");
  m.expect(t, {"I32", "I64"}, {2});
  int64_t shape[2];
  for (size_t i = 0; i < 2; ++i) {
    int64_t v = 0;
    if (t.dtype_name == "I64") std::memcpy(&v, static_cast<const char*>(t.data) + 8 * i, 8);
    else v = int32_t(u32_at(t, i));
    shape[i] = v;
  }
  if (shape[0] != m.N || shape[1] != m.K)
    m.fail_at(t, fmt::format("holds [{}, {}], but the model needs [N, K] = [{}, {}]", shape[0], shape[1], m.N, m.K));
}

std::vector<float> row_scales(const ModuleTensors& m, int64_t groups) {
  const StoredTensor& scales = m.need("weight_scale");
  m.expect(scales, {"BF16", "F16", "F32"}, {m.N, groups});
  std::vector<float> s(size_t(m.N * groups));
  for (size_t i = 0; i < s.size(); ++i) s[i] = float_at(scales, i);
  return s;
}

const StoredTensor* g_idx_of(const ModuleTensors& m) {
  const StoredTensor* g_idx = m.find("weight_g_idx");
  if (g_idx) m.expect(*g_idx, {"I32"}, {m.K});
  return g_idx;
}

// A symmetric scheme has no zero points; an asymmetric one must have them.
const StoredTensor* zero_points(const ModuleTensors& m) {
  return m.quant.sym ? m.find("weight_zero_point") : &m.need("weight_zero_point");
}

}  // namespace

HostLinear decode_ct_packed(const ModuleTensors& m) {
  const int bits = m.quant.bits;
  const int pf = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int offset = 1 << (bits - 1);
  const int64_t N = m.N, K = m.K, G = m.group(), groups = K / G;
  const int64_t words = (K + pf - 1) / pf;
  const StoredTensor& packed = m.need("weight_packed");
  m.expect(packed, {"I32"}, {N, words});
  check_weight_shape(m);
  std::vector<float> s = row_scales(m, groups);
  const GroupLayout layout = group_layout(m, G, g_idx_of(m));

  // Zero points as stored (zp + offset), [N, groups]; `offset` when symmetric.
  std::vector<uint8_t> zeros(size_t(N * groups), uint8_t(offset));
  if (const StoredTensor* zp = zero_points(m)) {
    m.expect(*zp, {"I32"}, {(N + pf - 1) / pf, groups});
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g)
        zeros[size_t(n * groups + g)] =
            uint8_t((u32_at(*zp, size_t((n / pf) * groups + g)) >> (bits * (n % pf))) & mask);
  }
  auto stored = [&](int64_t n, int64_t k) {
    return int((u32_at(packed, size_t(n * words + k / pf)) >> (bits * (k % pf))) & mask);
  };
  if (bits == 4) {
    std::vector<uint8_t> q(size_t(N * K));  // [N, K]: q + 8
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) q[size_t(n * K + k)] = uint8_t(stored(n, k));
    return int4_linear(m, layout, q, std::move(s), std::move(zeros));
  }
  std::vector<int8_t> q(size_t(N * K));  // [N, K]: (q + 128) - (zp + 128)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      q[size_t(n * K + k)] = int8_code(stored(n, k) - zeros[size_t(n * groups + layout.group_of[size_t(k)])], m,
                                       packed, n, k);
  return int8_linear(m, layout, q, std::move(s));
}

HostLinear decode_ct_int(const ModuleTensors& m) {
  const int64_t N = m.N, K = m.K, G = m.group(), groups = K / G;
  const StoredTensor& weight = m.need("weight");
  m.expect(weight, {"I8"}, {N, K});
  std::vector<float> s = row_scales(m, groups);
  const GroupLayout layout = group_layout(m, G, g_idx_of(m));
  const StoredTensor* zp = zero_points(m);
  if (zp) m.expect(*zp, {"I8"}, {N, groups});
  const auto* w = static_cast<const int8_t*>(weight.data);
  std::vector<int8_t> q(size_t(N * K));  // [N, K]: q - zp
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int z = zp ? static_cast<const int8_t*>(zp->data)[n * groups + layout.group_of[size_t(k)]] : 0;
      q[size_t(n * K + k)] = int8_code(int(w[n * K + k]) - z, m, weight, n, k);
    }
  return int8_linear(m, layout, q, std::move(s));
}

}  // namespace dcu
