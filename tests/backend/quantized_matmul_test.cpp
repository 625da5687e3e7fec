// The CPU matmul of quantized weights (the reference of the GPU kernels) against Linear's formulas
// evaluated element by element in double, and load-time quantization against its definition.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "backend/cpu/cpu_ops.h"
#include "model/quantize.h"
#include "quantized_test_util.h"

namespace dcu::testing {
namespace {

// y[t, n] = sum_k x[t, k] * W[n, k] in double, W from Linear::at.
std::vector<double> reference_matmul(const std::vector<float>& x, const Linear& w, int64_t T) {
  const int64_t N = w.rows(), K = w.cols();
  std::vector<double> y(size_t(T * N));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const double wv = w.at(n, k);
      for (int64_t t = 0; t < T; ++t) y[size_t(t * N + n)] += wv * x[size_t(t * K + k)];
    }
  return y;
}

struct Case {
  WeightFormat format;
  int64_t T, K, N, group;
  bool zeros;
};

TEST(QuantizedMatmul, CpuMatchesLinearFormulas) {
  std::mt19937 rng(7);
  const Case cases[] = {
      {WeightFormat::Int8, 1, 256, 64, 256, false}, {WeightFormat::Int8, 5, 512, 33, 128, false},
      {WeightFormat::Int4, 1, 256, 64, 128, false}, {WeightFormat::Int4, 7, 512, 31, 32, true},
      {WeightFormat::Int4, 3, 1024, 48, 128, true},
  };
  for (const Case& c : cases) {
    const HostLinear h = random_quantized(rng, c.format, c.N, c.K, c.group, c.zeros);
    const Linear w = linear_view(h);
    std::vector<float> x(size_t(c.T * c.K)), y(size_t(c.T * c.N));
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& v : x) v = dist(rng);
    cpu::matmul(Tensor(x.data(), DType::F32, {c.T, c.K}), w, Tensor(y.data(), DType::F32, {c.T, c.N}));
    const std::vector<double> expected = reference_matmul(x, w, c.T);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], expected[i], 1e-5 * (1.0 + std::fabs(expected[i])))
          << weight_format_name(c.format) << " group " << c.group << " zeros " << c.zeros << " at " << i;
  }
}

// Act-order: canonical column j multiplies input feature k_order[j].
TEST(QuantizedMatmul, ActOrderReadsTheInputsInItsOrder) {
  std::mt19937 rng(3);
  const int64_t T = 3, K = 256, N = 20;
  HostLinear h = random_quantized(rng, WeightFormat::Int4, N, K, 32, true);
  h.k_order.resize(size_t(K));
  for (int64_t k = 0; k < K; ++k) h.k_order[size_t(k)] = int32_t((k * 37 + 11) % K);  // a permutation (37 odd)
  const Linear w = linear_view(h);
  std::vector<float> x(size_t(T * K)), y(size_t(T * N));
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : x) v = dist(rng);
  cpu::matmul(Tensor(x.data(), DType::F32, {T, K}), w, Tensor(y.data(), DType::F32, {T, N}));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t j = 0; j < K; ++j) want += double(w.at(n, j)) * x[size_t(t * K + h.k_order[size_t(j)])];
      ASSERT_NEAR(y[size_t(t * N + n)], want, 1e-5 * (1.0 + std::fabs(want))) << t << " " << n;
    }
}

// The int4 layout (backend/linear.h): in each 32-bit word, nibble j holds k = 2j and nibble j + 4 holds
// k = 2j + 1, so (word >> 4j) & 0x000F000F holds the codes of k = 2j and 2j + 1 in its two halves.
TEST(QuantizedMatmul, Int4PackingPutsEvenKInTheLowHalfWord) {
  uint8_t q[16], packed[8];
  for (int k = 0; k < 16; ++k) q[k] = uint8_t(k);
  pack_int4_row(q, 16, packed);
  uint32_t word;
  std::memcpy(&word, packed, 4);
  EXPECT_EQ(word, 0x75316420u);  // nibbles from the lowest: k = 0, 2, 4, 6, 1, 3, 5, 7
  for (int j = 0; j < 4; ++j) EXPECT_EQ((word >> (4 * j)) & 0x000F000Fu, uint32_t(2 * j) | uint32_t(2 * j + 1) << 16);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(int4_code(packed, k), k);
}

// Every quantized weight is within half a step of the original, codes use the range, and a zero
// row quantizes to zeros.
TEST(QuantizedMatmul, LoadTimeQuantizationRoundsToNearest) {
  std::mt19937 rng(11);
  const int64_t N = 9, K = 512;
  std::vector<float> w(size_t(N * K));
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (float& v : w) v = dist(rng);
  for (int64_t k = 0; k < K; ++k) w[size_t(4 * K + k)] = 0.0f;  // an all-zero row
  w[7] = 1.5f;  // an outlier: its row's (or group's) scale grows
  for (WeightFormat f : {WeightFormat::Int8, WeightFormat::Int4}) {
    HostLinear h = make_host_linear(f, N, K, "test");
    quantize_rows(w.data(), DType::F32, 0, N, h);
    const Linear q = linear_view(h);
    const float levels = f == WeightFormat::Int8 ? 127.0f : 7.0f;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < q.groups_per_row(); ++g) {
        float absmax = 0.0f;
        for (int64_t k = g * q.group; k < (g + 1) * q.group; ++k) absmax = std::max(absmax, std::fabs(w[size_t(n * K + k)]));
        const float scale = h.scales[size_t(n * q.groups_per_row() + g)];
        if (absmax == 0.0f) EXPECT_EQ(scale, 1.0f);
        else EXPECT_FLOAT_EQ(scale, absmax / levels);
        for (int64_t k = g * q.group; k < (g + 1) * q.group; ++k)
          ASSERT_LE(std::fabs(q.at(n, k) - w[size_t(n * K + k)]), 0.5f * scale * (1.0f + 1e-5f))
              << weight_format_name(f) << " n " << n << " k " << k;
      }
    EXPECT_FLOAT_EQ(q.at(0, 7), 1.5f);  // the absmax is exact
  }
}

TEST(QuantizedMatmul, GroupsThatDoNotFitAreErrors) {
  EXPECT_THROW(make_host_linear(WeightFormat::Int4, 4, 200, "w"), Error);  // not a multiple of 32
  EXPECT_EQ(make_host_linear(WeightFormat::Int4, 4, 192, "w").group, 64);   // 192 % 128 != 0
  EXPECT_THROW(make_host_linear(WeightFormat::Int8, 4, 100, "w"), Error);  // not a multiple of 32
  EXPECT_THROW(load_time_quantization("int3"), Error);
  EXPECT_EQ(load_time_quantization("none"), WeightFormat::Dense);
}

}  // namespace
}  // namespace dcu::testing
