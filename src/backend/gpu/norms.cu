// Row-wise RMSNorm (plain or zero-centered weights) and the GDN output norm gated by silu(z).
// One block per row; the sum of squares goes through the logical-warp reduction.

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kThreads = 256;

// grid (R).   x, out [R, n] (may alias); w [n]; z [R, n] or null
template <int Lanes, typename W, bool Gated>
__global__ void rms_norm_kernel(const float* x, const float* z, const W* w, float eps, float offset, float* out,
                                int64_t n) {
  __shared__ float scratch[kThreads / 32];
  const int64_t r = blockIdx.x;
  const float* xr = x + r * n;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum<Lanes>(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / float(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float y = xr[i] * inv * (offset + to_f32(w[i]));
    if constexpr (Gated) {
      const float g = z[r * n + i];
      y *= g / (1.0f + expf(-g));
    }
    out[r * n + i] = y;
  }
}

template <bool Gated>
void launch_norm(const Launch& l, const float* x, const float* z, const void* w, DType w_type, float eps, float offset,
                 float* out, int64_t R, int64_t n) {
  if (R == 0) return;
  with_lanes(l.lanes, [&](auto lanes) {
    with_elem_type(w_type, [&](auto e) {
      using W = decltype(e);
      rms_norm_kernel<decltype(lanes)::value, W, Gated>
          <<<unsigned(R), kThreads, 0, l.stream>>>(x, z, static_cast<const W*>(w), eps, offset, out, n);
    });
  });
  GPU_CHECK_LAUNCH();
}

}  // namespace

void launch_rms_norm(const Launch& l, const float* x, const void* w, DType w_type, float eps, bool unit_offset,
                     float* out, int64_t R, int64_t n) {
  launch_norm<false>(l, x, nullptr, w, w_type, eps, unit_offset ? 1.0f : 0.0f, out, R, n);
}

void launch_gated_rms_norm(const Launch& l, const float* x, const float* z, const void* w, DType w_type, float eps,
                           float* out, int64_t R, int64_t n) {
  launch_norm<true>(l, x, z, w, w_type, eps, 0.0f, out, R, n);
}

}  // namespace dcu::gpu
