// Decode batches on NVIDIA tensor cores (CUDA, sm_80+): y [T, N] = x [T, K] . w [N, K]^T for 16-bit
// weights and 3..32 token rows, each weight streamed from memory once. cuBLAS (matmul.cu) runs two
// GEMMs for x = hi + lo (16-bit halves), reading the weights twice; here both halves multiply the
// same weight fragment.
//
// mma.sync m16n8k16: A = 16 weight rows x 16 k, B = 16 k x 8 tokens, f32 accumulators. A lane loads
// 16 contiguous bytes of a weight row (8 k) and the same 8 k of its tokens' activations; those 8 k
// fill the lane's fragment slots of two k16 multiplies, four each. That is a permutation of k,
// the same for A and B, so the sums are unchanged and every load is a 16-byte vector.
//
// The activations are split once (launch_split16) into 16-bit hi and lo arrays. A block of 8 warps owns
// 256 weight rows (32 per warp) and stages each 64-k chunk of the activations in shared memory once
// for all of them; the grid splits K until there are about two blocks per SM, and the splits' partial
// sums are added in split order by a second kernel (deterministic). Measured in
// docs/PERFORMANCE_GPU.md (round 5).

#include <algorithm>

#include "backend/gpu/kernels.h"

#if defined(DCUSERVE_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace dcu::gpu {
namespace {

constexpr int kWarps = 8;
constexpr int kTileRows = 32;                       // weight rows per warp: two m16 tiles
constexpr int kBlockRows = kWarps * kTileRows;      // 256
constexpr int kChunkK = 64;                         // k staged in shared memory per iteration: two k32 steps
constexpr int kMinBlocks = 264;                     // about two blocks per SM on an H200 (132 SMs)

// d += A . B for one m16n8k16 tile, A and B of the 16-bit type W (bf16 or f16), f32 accumulators.
#define DCU_MMA_M16N8K16(type)                                                                               \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
               "{%8,%9}, {%0,%1,%2,%3};"                                                                      \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                               \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

template <typename W>
__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<W, Bf16>) DCU_MMA_M16N8K16("bf16");
  else DCU_MMA_M16N8K16("f16");
}

// grid (ceil(N / 256), S). Warp w of block (b, s) owns weight rows 256 b + 32 w .. + 31 and k range
// [s * k_split, (s + 1) * k_split). x_hi, x_lo [T, K] (16-bit, x = hi + lo); w [N, K];
// out [S, T, N]: this split's partial sums (y itself when S = 1). NT n8 tiles of tokens.
template <typename W, int NT>
__global__ void __launch_bounds__(kWarps * 32)
    tensor_core_matmul_kernel(const uint16_t* __restrict__ x_hi, const uint16_t* __restrict__ x_lo,
                              const uint16_t* __restrict__ w, float* __restrict__ out, int T, int K, int N,
                              int k_split) {
#if __CUDA_ARCH__ >= 800
  // The chunk's activations, one row of 64 k (8 x 16 bytes) per token, staged once for all 8 warps.
  // Rows padded by 4 x 16 bytes: the 8 lanes of a quarter warp (two tokens) hit distinct banks.
  __shared__ uint4 stage_hi[NT * 8][kChunkK / 8 + 4], stage_lo[NT * 8][kChunkK / 8 + 4];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int row0 = blockIdx.x * kBlockRows + warp * kTileRows;
  const int k_begin = blockIdx.y * k_split, k_end = min(K, k_begin + k_split);
  float acc[2][NT][4] = {};
  for (int kc = k_begin; kc < k_end; kc += kChunkK) {
    // This warp's weights for the chunk (rows g, g + 8 of both tiles, 8 k per step), loaded before the
    // barrier so they are in flight while the activations are staged.
    uint4 a[2][2][2];  // [step][tile][row half]
#pragma unroll
    for (int step = 0; step < 2; ++step)
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 16 * m + g + 8 * h;
          a[step][m][h] = row < N ? __ldcs(reinterpret_cast<const uint4*>(w + int64_t(row) * K + kc + 32 * step + 8 * c))
                                  : make_uint4(0, 0, 0, 0);
        }
    for (int i = threadIdx.x; i < NT * 8 * (kChunkK / 8); i += kWarps * 32) {
      const int token = i / (kChunkK / 8), q = i % (kChunkK / 8);
      const int64_t at = int64_t(token) * K + kc + 8 * q;
      const bool live = token < T;
      stage_hi[token][q] = live ? *reinterpret_cast<const uint4*>(x_hi + at) : make_uint4(0, 0, 0, 0);
      stage_lo[token][q] = live ? *reinterpret_cast<const uint4*>(x_lo + at) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    // Step s: the lane's 8 k at 32 s + 8 c fill its A slots (a0, a2) of row g and (a1, a3) of row
    // g + 8 and, for token g of each tile, its B slots b0, b1 of two k16 halves (.x.y, then .z.w).
#pragma unroll
    for (int step = 0; step < 2; ++step)
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const uint4 bh = stage_hi[8 * n + g][4 * step + c], bl = stage_lo[8 * n + g][4 * step + c];
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const uint4 &r0 = a[step][m][0], &r1 = a[step][m][1];
          mma<W>(acc[m][n], r0.x, r1.x, r0.y, r1.y, bh.x, bh.y);
          mma<W>(acc[m][n], r0.x, r1.x, r0.y, r1.y, bl.x, bl.y);
          mma<W>(acc[m][n], r0.z, r1.z, r0.w, r1.w, bh.z, bh.w);
          mma<W>(acc[m][n], r0.z, r1.z, r0.w, r1.w, bl.z, bl.w);
        }
      }
    __syncthreads();  // the stage is rewritten next iteration
  }
  // Accumulator i of tile (m, n): row 16 m + g (+ 8 for i >= 2), token 8 n + 2 c (+ 1 for odd i).
  float* part = out + int64_t(blockIdx.y) * T * N;
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = row0 + 16 * m + g + 8 * (i / 2), token = 8 * n + 2 * c + i % 2;
        if (row < N && token < T) part[int64_t(token) * N + row] = acc[m][n][i];
      }
#endif
}

// y [T, N] = the sum over s of parts [S, T, N], in split order (deterministic).
__global__ void sum_splits_kernel(const float* parts, int S, int64_t n, float* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = parts[i];
    for (int s = 1; s < S; ++s) v += parts[s * n + i];
    y[i] = v;
  }
}

template <typename W>
void launch_typed(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  const int T = int(a.T), K = int(a.K), N = int(a.N);
  const int blocks = (N + kBlockRows - 1) / kBlockRows;
  // Split K until the grid has about two blocks per SM (each split a multiple of the chunk).
  const int chunks = K / kChunkK;
  const int want = std::min(chunks, (kMinBlocks + blocks - 1) / blocks);
  const int k_split = (chunks + want - 1) / want * kChunkK, S = (K + k_split - 1) / k_split;
  const int64_t n = int64_t(T) * K, outputs = int64_t(T) * N;
  char* base = static_cast<char*>(scratch.get(size_t(2 * n) * 2 + (S > 1 ? size_t(S * outputs) * 4 : 0)));
  auto* hi = reinterpret_cast<uint16_t*>(base);
  auto* lo = hi + n;
  float* parts = S > 1 ? reinterpret_cast<float*>(base + 4 * n) : a.y;
  launch_split16(l, a.x, hi, lo, n, a.w_type);
  const auto* w = static_cast<const uint16_t*>(a.w);
  const dim3 grid{unsigned(blocks), unsigned(S)};
  if (T <= 8) tensor_core_matmul_kernel<W, 1><<<grid, kWarps * 32, 0, l.stream>>>(hi, lo, w, parts, T, K, N, k_split);
  else if (T <= 16) tensor_core_matmul_kernel<W, 2><<<grid, kWarps * 32, 0, l.stream>>>(hi, lo, w, parts, T, K, N, k_split);
  else tensor_core_matmul_kernel<W, 4><<<grid, kWarps * 32, 0, l.stream>>>(hi, lo, w, parts, T, K, N, k_split);
  GPU_CHECK_LAUNCH();
  if (S > 1) {
    sum_splits_kernel<<<unsigned(std::min<int64_t>((outputs + 255) / 256, 4096)), 256, 0, l.stream>>>(parts, S, outputs, a.y);
    GPU_CHECK_LAUNCH();
  }
}

}  // namespace

bool tensor_core_matmul_fits(const MatmulArgs& a) {
  return (a.w_type == DType::BF16 || a.w_type == DType::F16) && a.T >= 1 && a.T <= kTensorCoreMaxTokens &&
         a.K % kChunkK == 0 && reinterpret_cast<uintptr_t>(a.w) % 16 == 0;
}

void launch_tensor_core_matmul(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  if (a.w_type == DType::BF16) launch_typed<Bf16>(l, a, scratch);
  else launch_typed<F16>(l, a, scratch);
}

}  // namespace dcu::gpu
#endif
