#pragma once
// What the two GEMV kernels share (matmul.cu: f32 activations; gemv_int8_activations.cu: int8 codes):
// the block shape, streaming loads, the launch's matrices, and the epilogue that sums each output over
// the block and writes it (SwiGLU, accumulation, the folded norm's row scale). Device code only.

#include "backend/gpu/kernels.h"

namespace dcu::gpu {

// 128 threads: 1-5 % faster than 256 at one and two rows on H200 (9B batch 2 375.2 -> 395.4 tok/s):
// twice the blocks, each thread twice the k.
constexpr int kGemvThreads = 128;

// 16 bytes of weights; on CUDA marked streaming (read once: leave L1 to the activations).
__device__ __forceinline__ uint4 load16(const void* p) {
#if defined(DCUSERVE_CUDA)
  return __ldcs(reinterpret_cast<const uint4*>(p));
#else
  return *reinterpret_cast<const uint4*>(p);
#endif
}

// Eight consecutive norm weights as f32 (an ordinary load: every block reads them).
__device__ __forceinline__ void load8_norm(const void* w, DType type, int64_t k, float* out) {
  if (type == DType::BF16 || type == DType::F16) {
    const uint4 u = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(w) + k);
    const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = type == DType::BF16 ? widen_pair(words[i], Bf16{}) : widen_pair(words[i], F16{});
      out[2 * i] = p.x, out[2 * i + 1] = p.y;
    }
  } else {
    const float4 a = reinterpret_cast<const float4*>(static_cast<const float*>(w) + k)[0];
    const float4 b = reinterpret_cast<const float4*>(static_cast<const float*>(w) + k)[1];
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  }
}
__device__ __forceinline__ float load_norm(const void* w, DType type, int64_t k) {
  if (type == DType::BF16) return to_f32(static_cast<const Bf16*>(w)[k]);
  if (type == DType::F16) return to_f32(static_cast<const F16*>(w)[k]);
  return static_cast<const float*>(w)[k];
}

// The matrices of one GEMV launch: part p owns blocks [block_end[p - 1], block_end[p]).
template <typename W>
struct GemvParts {
  const W* w[kMaxMatmulGroup];   // [N, K] (quantized: [N, K / kCodesPerElement])
  float* y[kMaxMatmulGroup];     // [T, N]
  int64_t N[kMaxMatmulGroup];
  const float* scales[kMaxMatmulGroup];   // quantized: [N, K / group]
  const uint8_t* zeros[kMaxMatmulGroup];  // Int4: [N, K / group], or null (8)
  int64_t group;
  unsigned block_end[kMaxMatmulGroup];
  // The MLP's gate and up projections (w[0], w[1]) as one: a block takes C / 2 rows of each and
  // writes y[0] = silu(gate) * up.
  bool swiglu = false;
  GemvFusion fusion;
};

// Fills parts for `count` matmuls of one x (or gate/up as one when swiglu) with blocks of C output
// columns; returns the grid size.
template <typename W>
unsigned gemv_parts(const MatmulArgs* group, int count, bool swiglu, const GemvFusion& fusion, int C,
                    GemvParts<W>& parts) {
  parts = GemvParts<W>{};
  parts.swiglu = swiglu;
  parts.fusion = fusion;
  parts.group = group[0].group;
  unsigned grid = 0;
  for (int p = 0; p < count; ++p) {
    parts.w[p] = static_cast<const W*>(group[p].w);
    parts.y[p] = group[p].y;
    parts.N[p] = group[p].N;
    parts.scales[p] = group[p].scales;
    parts.zeros[p] = group[p].zeros;
    // swiglu: up's rows ride in gate's blocks, C / 2 of each per block
    if (!swiglu || p == 0) grid += blocks_for(group[p].N, swiglu ? C / 2 : C);
    parts.block_end[p] = grid;
  }
  for (int p = count; p < kMaxMatmulGroup; ++p) parts.block_end[p] = grid;  // group_entry reads them
  return grid;
}

// The block's share of the launch: matrix p, its first output column n0 and the columns it writes.
struct GemvBlock {
  int p;
  int64_t n0;
  int columns;
};
template <typename W, int C>
__device__ __forceinline__ GemvBlock gemv_block(const GemvParts<W>& parts) {
  const int p = group_entry(parts.block_end, unsigned(blockIdx.x));
  const int64_t block = blockIdx.x - (p > 0 ? group_pick(parts.block_end, p - 1) : 0u);
  const int columns = parts.swiglu ? C / 2 : C;
  return {p, block * columns, columns};
}
// The weight row of the block's column c (past N: the last row again, computed and not written); for
// swiglu columns C / 2 .. C - 1 are the up projection's rows (gemv_weights).
__device__ __forceinline__ int64_t gemv_row(const GemvBlock& b, int c, int64_t N) {
  return min(b.n0 + c % b.columns, N - 1);
}

// The block's C weight rows: their codes (or 16-bit values) and, quantized, their scales and zero
// points (null: 8). Columns C / 2 .. C - 1 of a swiglu block are the up projection's rows (`second`; else
// the same matrix as the first half). Rows are kept as 32-bit indices, not a pointer per column, so a
// GEMV of 8 columns holds 8 registers for them instead of 48.
template <typename W, int C>
struct GemvRows {
  const W* w[2];
  const float* scales[2];   // quantized: [N, K / group]
  const uint8_t* zeros[2];  // Int4: [N, K / group], or null (8)
  uint32_t row[C];
  int64_t row_elements, groups;
  __device__ __forceinline__ const W* weights(int c) const { return w[c >= C / 2] + int64_t(row[c]) * row_elements; }
  __device__ __forceinline__ float scale(int c, int64_t g) const {
    return scales[c >= C / 2][int64_t(row[c]) * groups + g];
  }
  __device__ __forceinline__ int zero(int c, int64_t g) const {
    const uint8_t* z = zeros[c >= C / 2];
    return z ? int(z[int64_t(row[c]) * groups + g]) : 8;
  }
};
template <typename W, int C>
__device__ __forceinline__ GemvRows<W, C> gemv_rows(const GemvParts<W>& parts, const GemvBlock& b, int64_t K) {
  GemvRows<W, C> r;
  const int64_t N = group_pick(parts.N, b.p);
  r.w[0] = group_pick(parts.w, b.p), r.w[1] = parts.swiglu ? parts.w[1] : r.w[0];
  r.row_elements = K / kCodesPerElement<W>;
  if constexpr (kQuantized<W>) {
    r.scales[0] = group_pick(parts.scales, b.p), r.scales[1] = parts.swiglu ? parts.scales[1] : r.scales[0];
    r.zeros[0] = group_pick(parts.zeros, b.p), r.zeros[1] = parts.swiglu ? parts.zeros[1] : r.zeros[0];
    r.groups = K / parts.group;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) r.row[c] = uint32_t(gemv_row(b, c, N));
  return r;
}

// Starts fetching each row's first chunk (`chunk` k per thread) into L2, then waits for the kernel
// before (launched overlapping it: the weights come while it finishes) and lets the next one start.
template <typename W, int C>
__device__ __forceinline__ void gemv_start(const GemvRows<W, C>& rows, int64_t K, int chunk) {
  if (int64_t(threadIdx.x) * chunk < K)
#pragma unroll
    for (int c = 0; c < C; ++c) prefetch_l2(rows.weights(c) + threadIdx.x * chunk / kCodesPerElement<W>);
  wait_for_previous_kernel();
  let_next_kernel_start();
}

// The block's column sums acc [C][TR] and row squares [TR] (the folded norm's) start at zero.
template <int C, int TR>
__device__ __forceinline__ void zero_sums(float (&acc)[C][TR], float (&squares)[TR]) {
#pragma unroll
  for (int t = 0; t < TR; ++t) {
    squares[t] = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c][t] = 0.0f;
  }
}

// Sums acc[c][t] (and, with Norm, squares[t]: the rows' sums of squares for rms_norm over K) over the
// block through `partial` (shared memory, [kGemvThreads / Lanes][C * TR + TR]), then writes y[t, n0 + c] for the block's columns: scaled by the row's rsqrt(mean(x^2) + eps)
// with Norm, silu(gate) * up with swiglu, added to y with fusion.accumulate.
template <int Lanes, int TR, int C, bool Norm, typename W>
__device__ __forceinline__ void finish_gemv(const float (&acc)[C][TR], const float (&squares)[TR],
                                            float (*partial)[C * TR + TR], const GemvParts<W>& parts,
                                            const GemvBlock& b, int T, int64_t K) {
  float* __restrict__ y = group_pick(parts.y, b.p);
  const int64_t N = group_pick(parts.N, b.p);
  const GemvFusion& f = parts.fusion;
  const int warp = threadIdx.x / Lanes, lane = threadIdx.x % Lanes;
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int t = 0; t < TR; ++t)
      if (t < T) {
        const float s = warp_sum<Lanes>(acc[c][t]);
        if (lane == 0) partial[warp][c * TR + t] = s;
      }
  if constexpr (Norm)
#pragma unroll
    for (int t = 0; t < TR; ++t)
      if (t < T) {
        const float s = warp_sum<Lanes>(squares[t]);
        if (lane == 0) partial[warp][C * TR + t] = s;
      }
  __syncthreads();
  for (int i = threadIdx.x; i < b.columns * TR; i += kGemvThreads) {
    const int c = i / TR, t = i % TR;
    if (t < T && b.n0 + c < N) {
      float s = 0.0f, scale = 1.0f;
#pragma unroll
      for (int v = 0; v < kGemvThreads / Lanes; ++v) s += partial[v][i];
      if constexpr (Norm) {
        float ss = 0.0f;
#pragma unroll
        for (int v = 0; v < kGemvThreads / Lanes; ++v) ss += partial[v][C * TR + t];
        scale = 1.0f / sqrtf(ss / float(K) + f.eps);
        s *= scale;
      }
      if (parts.swiglu) {  // s is the gate; the up projection's sum is C / 2 columns further
        float up = 0.0f;
#pragma unroll
        for (int v = 0; v < kGemvThreads / Lanes; ++v) up += partial[v][i + b.columns * TR];
        s = s / (1.0f + expf(-s)) * up * scale;
      }
      float& out = y[int64_t(t) * N + b.n0 + c];
      out = f.accumulate ? out + s : s;
    }
  }
}

}  // namespace dcu::gpu
