// Row-wise RMSNorm (plain or zero-centered weights), the same after a residual add, and the GDN output
// norm gated by silu(z).
//
// A row is read once: each thread keeps its P float4 of the row in registers from the first load to the
// store, so all of its loads are in flight together (a loop that re-reads the row after the reduction,
// with the residual store between loads, measured 7.9 us for one 5,120-wide row on an H200: every load
// waited for the one before). Wide rows (the residual stream) get a block each; narrow rows (the GDN
// heads, dv = 128) a logical warp each, several rows per block. Rows that are not a multiple of 4
// floats, or wider than the registers hold, take a plain loop.

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kMaxThreads = 512;  // wave64 verification on NVIDIA allows up to 512 (compat.h)
constexpr int kMaxVectorsPerThread = 4;

enum class NormKind { Plain, Gated, Residual };

template <NormKind Kind>
__device__ __forceinline__ float scale_element(float x, float inv, float weight, float offset, float z) {
  float y = x * inv * (offset + weight);
  if constexpr (Kind == NormKind::Gated) y *= z / (1.0f + expf(-z));
  return y;
}

// Rows of n = 4 * n4 floats, `row_threads` threads per row (the block, or one logical warp), each
// holding float4 t, t + row_threads, ... (P of them) in registers.
// x, out [R, n] (may alias); w [n]; z [R, n]: Gated: the gate; Residual: added to x first (x = x + z
// is written back, then normalised into out).
template <int Lanes, typename W, NormKind Kind, int P>
__global__ void __launch_bounds__(kMaxThreads)
    rms_norm_registers_kernel(float* x, const float* z, const W* w, float eps, float offset, float* out, int64_t R,
                              int n4, int row_threads) {
  __shared__ float scratch[kMaxThreads / 32];
  start_after_previous_kernel();  // a matmul reads the result: it may start fetching its weights
  const int rows_per_block = blockDim.x / row_threads, t = threadIdx.x % row_threads;
  const int64_t r = int64_t(blockIdx.x) * rows_per_block + threadIdx.x / row_threads;
  const bool live = r < R;  // uniform per logical warp; a block-wide row is always live
  const int64_t base = r * n4;
  float4 v[P] = {}, g[P] = {};
  float ss = 0.0f;
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int i = t + p * row_threads;
    if (live && i < n4) {
      v[p] = reinterpret_cast<const float4*>(x)[base + i];
      if constexpr (Kind != NormKind::Plain) g[p] = reinterpret_cast<const float4*>(z)[base + i];
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int i = t + p * row_threads;
    if (live && i < n4) {
      if constexpr (Kind == NormKind::Residual) {
        v[p].x += g[p].x, v[p].y += g[p].y, v[p].z += g[p].z, v[p].w += g[p].w;
        reinterpret_cast<float4*>(x)[base + i] = v[p];
      }
      ss += v[p].x * v[p].x + v[p].y * v[p].y + v[p].z * v[p].z + v[p].w * v[p].w;
    }
  }
  ss = row_threads == int(blockDim.x) ? block_sum<Lanes>(ss, scratch) : warp_sum<Lanes>(ss);
  if (!live) return;
  const float inv = 1.0f / sqrtf(ss / float(4 * n4) + eps);
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int i = t + p * row_threads;
    if (i < n4) {
      const W* wi = w + 4 * i;
      float4 y;
      y.x = scale_element<Kind>(v[p].x, inv, to_f32(wi[0]), offset, g[p].x);
      y.y = scale_element<Kind>(v[p].y, inv, to_f32(wi[1]), offset, g[p].y);
      y.z = scale_element<Kind>(v[p].z, inv, to_f32(wi[2]), offset, g[p].z);
      y.w = scale_element<Kind>(v[p].w, inv, to_f32(wi[3]), offset, g[p].w);
      reinterpret_cast<float4*>(out)[base + i] = y;
    }
  }
}

// Any row width: one block per row, two passes over the row.
template <int Lanes, typename W, NormKind Kind>
__global__ void __launch_bounds__(kMaxThreads)
    rms_norm_loop_kernel(float* x, const float* z, const W* w, float eps, float offset, float* out, int64_t n) {
  __shared__ float scratch[kMaxThreads / 32];
  start_after_previous_kernel();
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
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    out[r * n + i] =
        scale_element<Kind>(xr[i], inv, to_f32(w[i]), offset, Kind == NormKind::Gated ? z[r * n + i] : 0.0f);
}

template <NormKind Kind>
void launch_norm(const Launch& l, float* x, const float* z, const void* w, DType w_type, float eps, float offset,
                 float* out, int64_t R, int64_t n) {
  if (R == 0) return;
  const bool vectors = n % 4 == 0 && aligned16(x) && aligned16(out) && (z == nullptr || aligned16(z));
  const int64_t n4 = n / 4;
  with_lanes(l.lanes, [&](auto lanes) {
    constexpr int Lanes = decltype(lanes)::value;
    with_elem_type(w_type, [&](auto e) {
      using W = decltype(e);
      // A logical warp per row when the row fits its registers, else a block (512 threads from 4,096
      // floats, where 256 would need more registers than kMaxVectorsPerThread).
      const int row_threads = n4 <= Lanes * kMaxVectorsPerThread ? Lanes : n4 >= 1024 ? kMaxThreads : 256;
      const int per_thread = int((n4 + row_threads - 1) / row_threads);
      if (!vectors || per_thread > kMaxVectorsPerThread) {
        launch_overlapping(l, rms_norm_loop_kernel<Lanes, W, Kind>, unsigned(R), n >= 4096 ? kMaxThreads : 256, 0, x,
                           z, static_cast<const W*>(w), eps, offset, out, n);
        return;
      }
      const int threads = row_threads == Lanes ? 256 : row_threads;
      const unsigned blocks = blocks_for(R, threads / row_threads);
      auto go = [&](auto p) {
        launch_overlapping(l, rms_norm_registers_kernel<Lanes, W, Kind, decltype(p)::value>, blocks, threads, 0, x, z,
                           static_cast<const W*>(w), eps, offset, out, R, int(n4), row_threads);
      };
      if (per_thread == 1) go(std::integral_constant<int, 1>{});
      else if (per_thread == 2) go(std::integral_constant<int, 2>{});
      else go(std::integral_constant<int, kMaxVectorsPerThread>{});
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
