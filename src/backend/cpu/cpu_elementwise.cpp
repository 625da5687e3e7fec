// Embedding lookup, residual add, SwiGLU, sigmoid gating, row gather, and the RMSNorm variants.

#include <cstring>

#include "backend/cpu/cpu_ops.h"

namespace dcu::cpu {

std::vector<float> to_f32(const Tensor& t) {
  std::vector<float> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f32(t.data, t.dtype, i);
  return out;
}

void embed(const Tensor& table, const Tensor& ids, Tensor out) {
  const int64_t T = ids.numel(), H = table.cols(), V = table.rows();
  DCU_CHECK(out.rows() == T && out.cols() == H && out.dtype == DType::F32);
  const int32_t* id = ids.as<int32_t>();
  float* y = out.as<float>();
#pragma omp parallel for schedule(static) if (T * H >= kParallelWork)
  for (int64_t t = 0; t < T; ++t) {
    DCU_CHECK(id[t] >= 0 && id[t] < V);
    const char* row = static_cast<const char*>(table.data) + size_t(id[t]) * H * dtype_size(table.dtype);
    for (int64_t h = 0; h < H; ++h) y[t * H + h] = load_as_f32(row, table.dtype, h);
  }
}

void rms_norm(const Tensor& x, const Tensor& w, float eps, bool unit_offset, Tensor out) {
  const int64_t R = x.rows(), n = x.cols();
  DCU_CHECK(w.numel() == n && out.numel() == x.numel());
  std::vector<float> scale = to_f32(w);
  if (unit_offset)
    for (float& s : scale) s += 1.0f;
  const float* in = x.as<float>();
  float* y = out.as<float>();
#pragma omp parallel for schedule(static) if (R * n >= kParallelWork)
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = in + r * n;
    float ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    float inv = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = xr[i] * inv * scale[i];
  }
}

void add_rms_norm(Tensor x, const Tensor& y, const Tensor& w, float eps, bool unit_offset, Tensor out) {
  add(x, y);
  rms_norm(x, w, eps, unit_offset, out);
}

void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, Tensor out) {
  const int64_t R = x.rows(), n = x.cols();
  DCU_CHECK(w.numel() == n && z.numel() == x.numel() && out.numel() == x.numel());
  std::vector<float> scale = to_f32(w);
  const float* in = x.as<float>();
  const float* gate = z.as<float>();
  float* y = out.as<float>();
#pragma omp parallel for schedule(static) if (R * n >= kParallelWork)
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = in + r * n;
    float ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    float inv = 1.0f / std::sqrt(ss / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = scale[i] * (xr[i] * inv) * silu(gate[r * n + i]);
  }
}

void add(Tensor x, const Tensor& y) {
  DCU_CHECK(x.numel() == y.numel());
  float* a = x.as<float>();
  const float* b = y.as<float>();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n >= kParallelWork)
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void swiglu(const Tensor& gate, const Tensor& up, Tensor out) {
  DCU_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  const float* g = gate.as<float>();
  const float* u = up.as<float>();
  float* y = out.as<float>();
  const int64_t n = gate.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelWork)
  for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

void sigmoid_mul(Tensor x, const Tensor& gate) {
  DCU_CHECK(x.numel() == gate.numel());
  float* a = x.as<float>();
  const float* g = gate.as<float>();
  const int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelWork)
  for (int64_t i = 0; i < n; ++i) a[i] *= sigmoid(g[i]);
}

void gather_rows(const Tensor& x, const Tensor& rows, Tensor out) {
  const int64_t R = rows.numel(), H = x.cols();
  DCU_CHECK(out.rows() == R && out.cols() == H);
  const int32_t* idx = rows.as<int32_t>();
  for (int64_t r = 0; r < R; ++r) {
    DCU_CHECK(idx[r] >= 0 && idx[r] < x.rows());
    std::memcpy(out.as<float>() + r * H, x.as<float>() + int64_t(idx[r]) * H, size_t(H) * sizeof(float));
  }
}

}  // namespace dcu::cpu
