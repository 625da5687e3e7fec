// Embedding lookup, residual add, SwiGLU, sigmoid gating and row gather: memory-bound one-pass kernels.

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// grid (T), block threads over H.   table [V, H], out [T, H]
template <typename E>
__global__ void embed_kernel(const E* table, const int32_t* ids, float* out, int64_t H) {
  start_after_previous_kernel();
  const int64_t t = blockIdx.x;
  const E* row = table + int64_t(ids[t]) * H;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) out[t * H + h] = to_f32(row[h]);
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  start_after_previous_kernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

// quads: the three arrays are 16-byte aligned and n a multiple of 4 (16-byte loads and stores).
__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n, bool quads) {
  start_after_previous_kernel();
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, stride = int64_t(gridDim.x) * blockDim.x;
  if (quads) {
    for (int64_t q = first; q < n / 4; q += stride) {
      const float4 g = reinterpret_cast<const float4*>(gate)[q], u = reinterpret_cast<const float4*>(up)[q];
      reinterpret_cast<float4*>(out)[q] =
          make_float4(silu(g.x) * u.x, silu(g.y) * u.y, silu(g.z) * u.z, silu(g.w) * u.w);
    }
    return;
  }
  for (int64_t i = first; i < n; i += stride) out[i] = silu(gate[i]) * up[i];
}

__global__ void sigmoid_mul_kernel(float* x, const float* gate, int64_t n) {
  start_after_previous_kernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= sigmoid(gate[i]);
}

// grid (R).   x [T, H], out [R, H]
__global__ void gather_rows_kernel(const float* x, const int32_t* rows, float* out, int64_t H) {
  start_after_previous_kernel();
  const int64_t r = blockIdx.x;
  const float* src = x + int64_t(rows[r]) * H;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) out[r * H + h] = src[h];
}

// grid (T).   x [T, K], order [K], out [T, K]: out[t, j] = x[t, order[j]]
__global__ void gather_columns_kernel(const float* x, const int32_t* order, float* out, int64_t K) {
  start_after_previous_kernel();
  const int64_t t = blockIdx.x;
  for (int64_t j = threadIdx.x; j < K; j += blockDim.x) out[t * K + j] = x[t * K + order[j]];
}

unsigned grid_for(int64_t n) { return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535)); }

}  // namespace

void launch_embed(const Launch& l, const void* table, DType table_type, const int32_t* ids, float* out, int64_t T,
                  int64_t H) {
  if (T == 0) return;
  with_elem_type(table_type, [&](auto e) {
    using E = decltype(e);
    launch_overlapping(l, embed_kernel<E>, unsigned(T), kThreads, 0, static_cast<const E*>(table), ids, out, H);
  });
  GPU_CHECK_LAUNCH();
}

void launch_add(const Launch& l, float* x, const float* y, int64_t n) {
  if (n == 0) return;
  launch_overlapping(l, add_kernel, grid_for(n), kThreads, 0, x, y, n);
  GPU_CHECK_LAUNCH();
}

void launch_swiglu(const Launch& l, const float* gate, const float* up, float* out, int64_t n) {
  if (n == 0) return;
  const bool quads = n % 4 == 0 && aligned16(gate) && aligned16(up) && aligned16(out);
  launch_overlapping(l, swiglu_kernel, grid_for(quads ? n / 4 : n), kThreads, 0, gate, up, out, n, quads);
  GPU_CHECK_LAUNCH();
}

void launch_sigmoid_mul(const Launch& l, float* x, const float* gate, int64_t n) {
  if (n == 0) return;
  launch_overlapping(l, sigmoid_mul_kernel, grid_for(n), kThreads, 0, x, gate, n);
  GPU_CHECK_LAUNCH();
}

void launch_gather_rows(const Launch& l, const float* x, const int32_t* rows, float* out, int64_t R, int64_t H) {
  if (R == 0) return;
  launch_overlapping(l, gather_rows_kernel, unsigned(R), kThreads, 0, x, rows, out, H);
  GPU_CHECK_LAUNCH();
}

void launch_gather_columns(const Launch& l, const float* x, const int32_t* order, float* out, int64_t T, int64_t K) {
  if (T == 0) return;
  launch_overlapping(l, gather_columns_kernel, unsigned(T), kThreads, 0, x, order, out, K);
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
