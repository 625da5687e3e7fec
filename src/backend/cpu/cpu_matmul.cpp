// y = x . w^T with f32 activations and BF16/F16/F32 weights. Each weight row is read once per call and
// shared by up to kRowBlock token rows; AVX2+FMA+F16C when available, portable code otherwise.
// Quantized weights (int8, int4, fp8) are dequantized a pair of rows at a time into f32 and take the
// same dot products: the reference every GPU kernel is tested against, exact but for the f32 sums'
// order. With int8 activations (backend/activation_quantization.h) integer codes multiply the rounded
// activations.

#include <algorithm>
#include <array>
#include <vector>

#include <immintrin.h>

#include "backend/activation_quantization.h"
#include "backend/cpu/cpu_ops.h"
#include "core/fp8_e4m3.h"

namespace dcu::cpu {
namespace {

constexpr int kRowBlock = 4;

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
inline __m256 load8(const uint16_t* w, DType t) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  if (t == DType::F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 load8(const float* w, DType) { return _mm256_loadu_ps(w); }
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(s);
}

// acc[r] = x[r, :] . w for rows r < nrows (nrows <= kRowBlock).
template <typename W>
void dot_rows(const W* w, DType t, const float* x, int64_t ldx, int nrows, int64_t K, float* acc) {
  __m256 sum[kRowBlock] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 wv = load8(w + k, t);
    for (int r = 0; r < nrows; ++r) sum[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + r * ldx + k), sum[r]);
  }
  for (int r = 0; r < nrows; ++r) {
    float s = hsum(sum[r]);
    for (int64_t kk = k; kk < K; ++kk) s += load_as_f32(w, t, kk) * x[r * ldx + kk];
    acc[r] = s;
  }
}
#else
template <typename W>
void dot_rows(const W* w, DType t, const float* x, int64_t ldx, int nrows, int64_t K, float* acc) {
  for (int r = 0; r < nrows; ++r) {
    float lanes[8] = {};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      for (int j = 0; j < 8; ++j) lanes[j] += load_as_f32(w, t, k + j) * x[r * ldx + k + j];
    float s = 0;
    for (float l : lanes) s += l;
    for (; k < K; ++k) s += load_as_f32(w, t, k) * x[r * ldx + k];
    acc[r] = s;
  }
}
#endif

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
// acc[w][r] = x[r, :] . w_w for two weight rows and up to kRowBlock token rows: each weight and
// activation load feeds two or four FMAs instead of one.
template <typename W>
void dot_rows_pair(const W* w0, const W* w1, DType t, const float* x, int64_t ldx, int nrows, int64_t K,
                   float acc[2][kRowBlock]) {
  __m256 s0[kRowBlock], s1[kRowBlock];
  for (int r = 0; r < kRowBlock; ++r) s0[r] = s1[r] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const __m256 a = load8(w0 + k, t), b = load8(w1 + k, t);
    for (int r = 0; r < nrows; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * ldx + k);
      s0[r] = _mm256_fmadd_ps(a, xv, s0[r]);
      s1[r] = _mm256_fmadd_ps(b, xv, s1[r]);
    }
  }
  for (int r = 0; r < nrows; ++r) {
    float u = hsum(s0[r]), v = hsum(s1[r]);
    for (int64_t kk = k; kk < K; ++kk) {
      u += load_as_f32(w0, t, kk) * x[r * ldx + kk];
      v += load_as_f32(w1, t, kk) * x[r * ldx + kk];
    }
    acc[0][r] = u;
    acc[1][r] = v;
  }
}
#else
template <typename W>
void dot_rows_pair(const W* w0, const W* w1, DType t, const float* x, int64_t ldx, int nrows, int64_t K,
                   float acc[2][kRowBlock]) {
  dot_rows(w0, t, x, ldx, nrows, K, acc[0]);
  dot_rows(w1, t, x, ldx, nrows, K, acc[1]);
}
#endif

template <typename W>
void matmul_typed(const float* x, const W* w, DType t, float* y, int64_t T, int64_t K, int64_t N) {
  // Weight rows in pairs; the token rows of each pair in blocks of kRowBlock.
  const int64_t pairs = (N + 1) / 2;
#pragma omp parallel for schedule(static) if (T * N * K >= kParallelWork)
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t n = 2 * p;
    for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
      const int nrows = int(std::min<int64_t>(kRowBlock, T - r0));
      if (n + 1 < N) {
        float acc[2][kRowBlock];
        dot_rows_pair(w + n * K, w + (n + 1) * K, t, x + r0 * K, K, nrows, K, acc);
        for (int r = 0; r < nrows; ++r) {
          y[(r0 + r) * N + n] = acc[0][r];
          y[(r0 + r) * N + n + 1] = acc[1][r];
        }
      } else {
        float acc[kRowBlock];
        dot_rows(w + n * K, t, x + r0 * K, K, nrows, K, acc);
        for (int r = 0; r < nrows; ++r) y[(r0 + r) * N + n] = acc[r];
      }
    }
  }
}

// Row n of a quantized w as f32 (Linear's formulas), K values.
void dequantize_row(const Linear& w, int64_t n, float* out) {
  const int64_t K = w.in_features, G = w.group, groups = w.groups_per_row();
  const float* scales = w.scales.as<float>() + n * groups;
  if (w.format == WeightFormat::Int8) {
    const int8_t* q = w.weight.as<int8_t>() + n * K;
    for (int64_t k = 0; k < K; ++k) out[k] = scales[k / G] * float(q[k]);
    return;
  }
  if (w.format == WeightFormat::Fp8) {
    static const std::array<float, 256> kValues = [] {
      std::array<float, 256> v{};
      for (int b = 0; b < 256; ++b) v[size_t(b)] = fp8_e4m3_to_f32(uint8_t(b));
      return v;
    }();
    const uint8_t* q = w.weight.as<uint8_t>() + n * K;
    for (int64_t k = 0; k < K; ++k) out[k] = scales[k / G] * kValues[q[k]];
    return;
  }
  const uint8_t* packed = w.weight.as<uint8_t>() + n * (K / 2);
  const uint8_t* zeros = w.zeros.empty() ? nullptr : w.zeros.as<uint8_t>() + n * groups;
  for (int64_t k = 0; k < K; ++k) {
    const int z = zeros ? zeros[k / G] : 8;
    out[k] = scales[k / G] * float(int(int4_code(packed, k)) - z);
  }
}

void matmul_quantized(const float* x, const Linear& w, float* y, int64_t T) {
  const int64_t K = w.in_features, N = w.rows(), pairs = (N + 1) / 2;
#pragma omp parallel if (T * N * K >= kParallelWork)
  {
    std::vector<float> rows(size_t(2 * K));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t n = 2 * p;
      const bool pair = n + 1 < N;
      dequantize_row(w, n, rows.data());
      if (pair) dequantize_row(w, n + 1, rows.data() + K);
      for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
        const int nrows = int(std::min<int64_t>(kRowBlock, T - r0));
        float acc[2][kRowBlock];
        if (pair) dot_rows_pair(rows.data(), rows.data() + K, DType::F32, x + r0 * K, K, nrows, K, acc);
        else dot_rows(rows.data(), DType::F32, x + r0 * K, K, nrows, K, acc[0]);
        for (int r = 0; r < nrows; ++r) {
          y[(r0 + r) * N + n] = acc[0][r];
          if (pair) y[(r0 + r) * N + n + 1] = acc[1][r];
        }
      }
    }
  }
}

}  // namespace

void matmul(const Tensor& x, const Linear& w, Tensor y, bool int8_activations) {
  const int64_t T = x.rows(), K = x.cols(), N = w.rows();
  DCU_CHECK(x.dtype == DType::F32 && y.dtype == DType::F32);
  DCU_CHECK(w.cols() == K && y.rows() == T && y.cols() == N);
  const Tensor& d = w.weight;
  if (w.quantized()) {
    // The activations in the weight's column order (act-order), rounded to int8 blocks on request.
    int8_activations = int8_activations && integer_codes(w.format);
    std::vector<float> prepared;
    const float* in = x.as<float>();
    if (!w.k_order.empty() || int8_activations) {
      prepared.resize(size_t(T * K));
      const int32_t* order = w.k_order.empty() ? nullptr : w.k_order.as<int32_t>();
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < K; ++j) prepared[size_t(t * K + j)] = in[t * K + (order ? order[j] : j)];
      if (int8_activations) round_activations_to_int8(prepared.data(), prepared.data(), T * K);
      in = prepared.data();
    }
    matmul_quantized(in, w, y.as<float>(), T);
  } else if (d.dtype == DType::F32) {
    matmul_typed(x.as<float>(), d.as<float>(), d.dtype, y.as<float>(), T, K, N);
  } else {
    matmul_typed(x.as<float>(), d.as<uint16_t>(), d.dtype, y.as<float>(), T, K, N);
  }
}

}  // namespace dcu::cpu
