// Row-wise RMSNorm (plain or zero-centered weights), the same after a residual add, and the GDN output
// norm gated by silu(z).
// One block per row; the sum of squares goes through the logical-warp reduction.

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kMaxThreads = 512;  // wave64 verification on NVIDIA allows up to 512 (compat.h)

enum class NormKind { Plain, Gated, Residual };

// grid (R).   x, out [R, n] (may alias); w [n]; z [R, n]: Gated: the gate; Residual: added to x first
// (x = x + z is written back, then normalised into out).
template <int Lanes, typename W, NormKind Kind>
__global__ void __launch_bounds__(kMaxThreads)
    rms_norm_kernel(float* x, const float* z, const W* w, float eps, float offset, float* out, int64_t n) {
  __shared__ float scratch[kMaxThreads / 32];
  const int64_t r = blockIdx.x;
  float* xr = x + r * n;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = xr[i];
    if constexpr (Kind == NormKind::Residual) xr[i] = v += z[r * n + i];  // read back below by this thread
    ss += v * v;
  }
  ss = block_sum<Lanes>(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / float(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float y = xr[i] * inv * (offset + to_f32(w[i]));
    if constexpr (Kind == NormKind::Gated) {
      const float g = z[r * n + i];
      y *= g / (1.0f + expf(-g));
    }
    out[r * n + i] = y;
  }
}

template <NormKind Kind>
void launch_norm(const Launch& l, float* x, const float* z, const void* w, DType w_type, float eps, float offset,
                 float* out, int64_t R, int64_t n) {
  if (R == 0) return;
  // Wide rows (the residual stream) get more threads: fewer dependent loads per thread.
  const int threads = n >= 4096 ? kMaxThreads : 256;
  with_lanes(l.lanes, [&](auto lanes) {
    with_elem_type(w_type, [&](auto e) {
      using W = decltype(e);
      rms_norm_kernel<decltype(lanes)::value, W, Kind>
          <<<unsigned(R), threads, 0, l.stream>>>(x, z, static_cast<const W*>(w), eps, offset, out, n);
    });
  });
  GPU_CHECK_LAUNCH();
}

}  // namespace

void launch_rms_norm(const Launch& l, const float* x, const void* w, DType w_type, float eps, bool unit_offset,
                     float* out, int64_t R, int64_t n) {
  launch_norm<NormKind::Plain>(l, const_cast<float*>(x), nullptr, w, w_type, eps, unit_offset ? 1.0f : 0.0f, out, R,
                               n);  // Plain never writes x
}

void launch_add_rms_norm(const Launch& l, float* x, const float* y, const void* w, DType w_type, float eps,
                         bool unit_offset, float* out, int64_t R, int64_t n) {
  launch_norm<NormKind::Residual>(l, x, y, w, w_type, eps, unit_offset ? 1.0f : 0.0f, out, R, n);
}

void launch_gated_rms_norm(const Launch& l, const float* x, const float* z, const void* w, DType w_type, float eps,
                           float* out, int64_t R, int64_t n) {
  launch_norm<NormKind::Gated>(l, const_cast<float*>(x), z, w, w_type, eps, 0.0f, out, R, n);  // never writes x
}

}  // namespace dcu::gpu
