// y = x . w^T with f32 activations and BF16/F16/F32 weights. Each weight row is read once per call and
// shared by up to kRowBlock token rows; AVX2+FMA+F16C when available, portable code otherwise.

#include <algorithm>

#include <immintrin.h>

#include "backend/cpu/cpu_ops.h"

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

template <typename W>
void matmul_typed(const float* x, const W* w, DType t, float* y, int64_t T, int64_t K, int64_t N) {
#pragma omp parallel for schedule(static) if (T * N * K >= kParallelWork)
  for (int64_t n = 0; n < N; ++n) {
    const W* wrow = w + n * K;
    for (int64_t r0 = 0; r0 < T; r0 += kRowBlock) {
      int nrows = int(std::min<int64_t>(kRowBlock, T - r0));
      float acc[kRowBlock];
      dot_rows(wrow, t, x + r0 * K, K, nrows, K, acc);
      for (int r = 0; r < nrows; ++r) y[(r0 + r) * N + n] = acc[r];
    }
  }
}

}  // namespace

void matmul(const Tensor& x, const Tensor& w, Tensor y) {
  const int64_t T = x.rows(), K = x.cols(), N = w.rows();
  DCU_CHECK(x.dtype == DType::F32 && y.dtype == DType::F32);
  DCU_CHECK(w.cols() == K && y.rows() == T && y.cols() == N);
  if (w.dtype == DType::F32)
    matmul_typed(x.as<float>(), w.as<float>(), w.dtype, y.as<float>(), T, K, N);
  else
    matmul_typed(x.as<float>(), w.as<uint16_t>(), w.dtype, y.as<float>(), T, K, N);
}

}  // namespace dcu::cpu
