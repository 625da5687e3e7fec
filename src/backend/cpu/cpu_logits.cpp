// Logit processing for sampling: penalties and bans, per-row top-k with softmax statistics, and the
// column copy that lays tensor-parallel vocabulary slices side by side.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/top_k.h"

namespace dcu::cpu {

void adjust_logits(Tensor logits, const Tensor& targets, const Tensor& factors) {
  const int64_t E = targets.rows(), R = logits.rows(), V = logits.cols();
  DCU_CHECK(logits.dtype == DType::F32 && targets.dtype == DType::I32 && factors.dtype == DType::F32);
  DCU_CHECK(targets.cols() == 2 && factors.cols() == 2 && factors.rows() == E);
  const int32_t* t = targets.as<int32_t>();
  const float* f = factors.as<float>();
  float* x = logits.as<float>();
  for (int64_t e = 0; e < E; ++e) {
    const int64_t row = t[2 * e], id = t[2 * e + 1];
    DCU_CHECK(row >= 0 && row < R && id >= 0 && id < V);
    float& v = x[row * V + id];
    v = (v > 0 ? v / f[2 * e] : v * f[2 * e]) - f[2 * e + 1];
  }
}

void mask_logits(Tensor logits, const Tensor& rows, const Tensor& allowed) {
  const int64_t m = rows.numel(), R = logits.rows(), V = logits.cols();
  DCU_CHECK(logits.dtype == DType::F32 && rows.dtype == DType::I32 && allowed.dtype == DType::I32);
  DCU_CHECK(allowed.rows() == m && allowed.cols() == (V + 31) / 32);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < m; ++i) {
    const int64_t r = rows.as<int32_t>()[i];
    DCU_CHECK(r >= 0 && r < R);
    const uint32_t* bits = reinterpret_cast<const uint32_t*>(allowed.as<int32_t>()) + i * allowed.cols();
    float* x = logits.as<float>() + r * V;
    for (int64_t id = 0; id < V; ++id)
      if (!((bits[id >> 5] >> (id & 31)) & 1u)) x[id] = minus_inf;
  }
}

void logit_summary(const Tensor& logits, const Tensor& rows, const Tensor& inv_temperature, Tensor top_values,
                   Tensor top_ids, Tensor stats) {
  const int64_t n = rows.numel(), V = logits.cols(), k = top_values.cols();
  DCU_CHECK(logits.dtype == DType::F32 && rows.dtype == DType::I32 && inv_temperature.dtype == DType::F32);
  DCU_CHECK(inv_temperature.numel() == n && top_values.rows() == n && top_ids.rows() == n && top_ids.cols() == k);
  DCU_CHECK(stats.numel() == 2 * n && k >= 1 && k <= std::min<int64_t>(V, kMaxLogitCandidates));
  for (int64_t i = 0; i < n; ++i) DCU_CHECK(rows.as<int32_t>()[i] >= 0 && rows.as<int32_t>()[i] < logits.rows());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1 && n * V > kParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows.as<int32_t>()[i];
    const std::span<const float> row(logits.as<float>() + r * V, size_t(V));
    const std::vector<ValueId> top = top_entries(row, int(k));
    for (int64_t j = 0; j < k; ++j) {
      top_values.as<float>()[i * k + j] = top[size_t(j)].first;
      top_ids.as<int32_t>()[i * k + j] = top[size_t(j)].second;
    }
    const double max = top[0].first, inv_t = inv_temperature.as<float>()[i];
    double sum = 0, mass = 0;
    if (max != -std::numeric_limits<double>::infinity())
      for (float x : row) sum += std::exp(double(x) - max), mass += std::exp((double(x) - max) * inv_t);
    stats.as<float>()[2 * i] = float(max + std::log(sum));
    stats.as<float>()[2 * i + 1] = float(mass);
  }
}

void copy_columns(const Tensor& x, Tensor out, int64_t column) {
  const int64_t R = x.rows(), w = x.cols(), W = out.cols();
  DCU_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && out.rows() == R && column >= 0 && column + w <= W);
  for (int64_t r = 0; r < R; ++r)
    std::memcpy(out.as<float>() + r * W + column, x.as<float>() + r * w, size_t(w) * sizeof(float));
}

}  // namespace dcu::cpu
