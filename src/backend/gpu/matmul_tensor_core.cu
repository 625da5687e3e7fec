// Decode batches on NVIDIA tensor cores (CUDA, sm_80+): y [T, N] = x [T, K] . w [N, K]^T for 16-bit
// weights and 5..32 token rows, each weight streamed from memory once. cuBLAS (matmul.cu) needs the
// activations in 16 bits too and so runs two GEMMs (x = hi + lo), reading the weights twice; here the
// split happens in registers and both halves multiply the same weight fragment.
//
// mma.sync m16n8k16: A = 16 weight rows x 16 k, B = 16 k x 8 tokens, f32 accumulators. A lane loads
// 16 contiguous bytes of a weight row (8 k) and the same 8 k of its tokens' activations; those 8 k
// fill the lane's A and B fragment slots of two consecutive k16 steps. That is a permutation of k,
// the same for A and B, so the sums are unchanged and every load is a 16-byte vector.
//
// A block of 8 warps owns MT * 16 weight rows; its warps split K and their partial sums are added in
// warp order through shared memory (deterministic). Measured in docs/PERFORMANCE_GPU.md (round 5).

#include "backend/gpu/kernels.h"

#if defined(DCUSERVE_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace dcu::gpu {
namespace {

constexpr int kWarps = 8;
constexpr int kStepK = 32;  // k per warp iteration: two mma k16 steps

__device__ __forceinline__ float round16(float x, Bf16) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float round16(float x, F16) { return __half2float(__float2half_rn(x)); }

__device__ __forceinline__ uint32_t pack16(float a, float b, Bf16) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack16(float a, float b, F16) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1, Bf16) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1, F16) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// grid (ceil(N / (MT * 16))), block 8 warps. MT m16 tiles of weight rows, NT n8 tiles of tokens.
// x [T, K] f32, w [N, K] W, y [T, N] f32; K % (kWarps * kStepK) == 0, w and x 16-byte aligned.
template <typename W, int MT, int NT>
__global__ void __launch_bounds__(kWarps * 32)
    tensor_core_matmul_kernel(const float* __restrict__ x, const uint16_t* __restrict__ w, float* __restrict__ y,
                              int T, int K, int N) {
#if __CUDA_ARCH__ >= 800
  __shared__ float partial[MT * 16][NT * 8 + 1];  // +1: conflict-free column reads below
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int row0 = blockIdx.x * MT * 16;
  const int k_per_warp = K / kWarps, k_begin = warp * k_per_warp;
  float acc[MT][NT][4] = {};
  // Rows g and g + 8 of each tile, 8 k each; the next iteration's are loaded before this one's
  // multiplies, so two iterations of weights are in flight.
  auto load_weights = [&](int k0, uint4 (&a)[MT][2]) {
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + 16 * m + g + 8 * h;
        const bool live = row < N && k0 < k_begin + k_per_warp;
        a[m][h] = live ? __ldcs(reinterpret_cast<const uint4*>(w + int64_t(row) * K + k0)) : make_uint4(0, 0, 0, 0);
      }
  };
  uint4 next[MT][2];
  load_weights(k_begin + 8 * c, next);
  for (int k0 = k_begin + 8 * c; k0 < k_begin + k_per_warp; k0 += kStepK) {
    uint4 a[MT][2];
#pragma unroll
    for (int m = 0; m < MT; ++m) a[m][0] = next[m][0], a[m][1] = next[m][1];
    load_weights(k0 + kStepK, next);
    uint32_t hi[NT][4], lo[NT][4];  // token g of each tile: the same 8 k, as 16-bit pairs
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const int token = 8 * n + g;
      float4 v0 = make_float4(0, 0, 0, 0), v1 = v0;
      if (token < T) {
        v0 = *reinterpret_cast<const float4*>(x + int64_t(token) * K + k0);
        v1 = *reinterpret_cast<const float4*>(x + int64_t(token) * K + k0 + 4);
      }
      const float v[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const float h0 = round16(v[2 * p], W{}), h1 = round16(v[2 * p + 1], W{});
        hi[n][p] = pack16(h0, h1, W{});
        lo[n][p] = pack16(v[2 * p] - h0, v[2 * p + 1] - h1, W{});
      }
    }
    // Step s uses the lane's k pairs 2s and 2s + 1: A slots (a0, a2) of row g, (a1, a3) of row g + 8.
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        mma(acc[m][n], a[m][0].x, a[m][1].x, a[m][0].y, a[m][1].y, hi[n][0], hi[n][1], W{});
        mma(acc[m][n], a[m][0].x, a[m][1].x, a[m][0].y, a[m][1].y, lo[n][0], lo[n][1], W{});
        mma(acc[m][n], a[m][0].z, a[m][1].z, a[m][0].w, a[m][1].w, hi[n][2], hi[n][3], W{});
        mma(acc[m][n], a[m][0].z, a[m][1].z, a[m][0].w, a[m][1].w, lo[n][2], lo[n][3], W{});
      }
  }
  // Accumulator d of tile (m, n): rows 16m + g (+ 8 for d2, d3), tokens 8n + 2c (+ 1 for d1, d3).
  for (int turn = 0; turn < kWarps; ++turn) {
    if (warp == turn) {
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            float& slot = partial[16 * m + g + 8 * (i / 2)][8 * n + 2 * c + i % 2];
            slot = turn == 0 ? acc[m][n][i] : slot + acc[m][n][i];
          }
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < MT * 16 * NT * 8; i += blockDim.x) {
    const int r = i % (MT * 16), t = i / (MT * 16);
    if (t < T && row0 + r < N) y[int64_t(t) * N + row0 + r] = partial[r][t];
  }
#endif
}

template <typename W, int MT>
void launch_rows(const Launch& l, const MatmulArgs& a) {
  const unsigned grid = unsigned((a.N + MT * 16 - 1) / (MT * 16));
  const auto* w = static_cast<const uint16_t*>(a.w);
  const int T = int(a.T), K = int(a.K), N = int(a.N);
  if (a.T <= 8) tensor_core_matmul_kernel<W, MT, 1><<<grid, kWarps * 32, 0, l.stream>>>(a.x, w, a.y, T, K, N);
  else if (a.T <= 16) tensor_core_matmul_kernel<W, MT, 2><<<grid, kWarps * 32, 0, l.stream>>>(a.x, w, a.y, T, K, N);
  else tensor_core_matmul_kernel<W, MT, 4><<<grid, kWarps * 32, 0, l.stream>>>(a.x, w, a.y, T, K, N);
  GPU_CHECK_LAUNCH();
}

}  // namespace

// Beyond 16 rows (four token tiles, more registers) cuBLAS hi + lo is faster on the widest matrices
// (H200, T = 32: [17408, 5120] 99.7 vs 108.1 us, [10240, 5120] 65.7 vs 70.5), this kernel on the
// narrower ones ([5120, 17408] 100.9 vs 109.7, [6144, 5120] 35.9 vs 45.5). One cut at 8,192 rows;
// it costs q_proj [12288, 5120] 7 us at T = 32 (78.1 vs 71.2).
constexpr int64_t kWideRows = 8192;

bool tensor_core_matmul_fits(const MatmulArgs& a) {
  if (a.T > 16 && a.N > kWideRows) return false;
  return (a.w_type == DType::BF16 || a.w_type == DType::F16) && a.T >= 1 && a.T <= kTensorCoreMaxTokens &&
         a.K % (kWarps * kStepK) == 0 && reinterpret_cast<uintptr_t>(a.w) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
}

// 32 weight rows per block. 64 (four m16 tiles) read the activations half as often but was slower
// on [17408, 5120] at T = 32 (157 vs 103 us for cuBLAS; registers limit it to one block per SM).
void launch_tensor_core_matmul(const Launch& l, const MatmulArgs& a) {
  if (a.w_type == DType::BF16) launch_rows<Bf16, 2>(l, a);
  else launch_rows<F16, 2>(l, a);
}

}  // namespace dcu::gpu
#endif
