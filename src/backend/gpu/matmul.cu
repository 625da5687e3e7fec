// y = x . w^T with f32 activations and F32/F16/BF16 weights, f32 accumulation.
//  - T <= kGemvMaxTokens (decode): GEMV, one logical warp per output column, every weight row read once
//    for all token rows; 16-byte weight loads. On gfx906 F16 weights go through v_dot2_f32_f16 (the
//    activations are rounded to f16 for the dot, the sum stays f32); BF16 is widened by a shift.
//  - larger T: a portable 64x64 shared-memory tiled kernel; on CUDA builds bf16/f16 weights with
//    T >= kBlasMinTokens go to cuBLAS (tensor cores, f32 compute) with the activations split into a
//    high and a low 16-bit part (x = hi + lo, two GEMMs), which keeps the result near f32 accuracy.

#include "backend/gpu/kernels.h"

#if defined(DCUSERVE_CUDA)
#include <cublas_v2.h>
#endif

namespace dcu::gpu {
namespace {

constexpr int kGemvThreads = 256;

// Eight consecutive weights widened to f32 (16-byte aligned source).
__device__ __forceinline__ void load8(const float* w, float* out) {
  const float4 a = reinterpret_cast<const float4*>(w)[0], b = reinterpret_cast<const float4*>(w)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
template <typename H>
__device__ __forceinline__ void load8(const H* w, float* out) {
  const uint4 u = *reinterpret_cast<const uint4*>(w);
  const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = widen_pair(words[i], H{});
    out[2 * i] = p.x, out[2 * i + 1] = p.y;
  }
}

#if defined(__gfx906__)
typedef _Float16 half2_t __attribute__((ext_vector_type(2)));
// acc += dot(8 f16 weights, 8 f32 activations) with v_dot2_f32_f16 (f16 products, f32 accumulation).
__device__ __forceinline__ float dot8_f16(uint4 wbits, const float* xp, float acc) {
  const float4 a = reinterpret_cast<const float4*>(xp)[0], b = reinterpret_cast<const float4*>(xp)[1];
  acc = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wbits.x), half2_t{_Float16(a.x), _Float16(a.y)}, acc, false);
  acc = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wbits.y), half2_t{_Float16(a.z), _Float16(a.w)}, acc, false);
  acc = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wbits.z), half2_t{_Float16(b.x), _Float16(b.y)}, acc, false);
  acc = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wbits.w), half2_t{_Float16(b.z), _Float16(b.w)}, acc, false);
  return acc;
}
#endif

// grid (ceil(N / warps)), block kGemvThreads; logical warp -> output column n; TR >= T token rows.
// x [T, K], w [N, K], y [T, N]. Vec: K % 8 == 0 and 16-byte aligned rows.
template <int Lanes, int TR, typename W, bool Vec>
__global__ void __launch_bounds__(kGemvThreads) gemv_kernel(const float* x, const W* w, float* y, int T, int64_t K,
                                                            int64_t N) {
  const int64_t n = int64_t(blockIdx.x) * (blockDim.x / Lanes) + threadIdx.x / Lanes;
  const int lane = threadIdx.x % Lanes;
  if (n >= N) return;  // uniform across the logical warp
  const W* wr = w + n * K;
  float acc[TR];
#pragma unroll
  for (int t = 0; t < TR; ++t) acc[t] = 0.0f;
  if constexpr (Vec) {
    for (int64_t k = int64_t(lane) * 8; k < K; k += int64_t(Lanes) * 8) {
#if defined(__gfx906__)
      if constexpr (std::is_same_v<W, F16>) {
        const uint4 wbits = *reinterpret_cast<const uint4*>(wr + k);
#pragma unroll
        for (int t = 0; t < TR; ++t)
          if (t < T) acc[t] = dot8_f16(wbits, x + int64_t(t) * K + k, acc[t]);
        continue;
      }
#endif
      float wv[8];
      load8(wr + k, wv);
#pragma unroll
      for (int t = 0; t < TR; ++t) {
        if (t < T) {
          const float* xp = x + int64_t(t) * K + k;
          const float4 a = reinterpret_cast<const float4*>(xp)[0], b = reinterpret_cast<const float4*>(xp)[1];
          acc[t] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x + wv[5] * b.y +
                    wv[6] * b.z + wv[7] * b.w;
        }
      }
    }
  } else {
    for (int64_t k = lane; k < K; k += Lanes) {
      const float wk = to_f32(wr[k]);
#pragma unroll
      for (int t = 0; t < TR; ++t)
        if (t < T) acc[t] += wk * x[int64_t(t) * K + k];
    }
  }
#pragma unroll
  for (int t = 0; t < TR; ++t) {
    const float s = warp_sum<Lanes>(acc[t]);
    if (lane == 0 && t < T) y[int64_t(t) * N + n] = s;
  }
}

constexpr int kTile = 64, kTileK = 16, kTileThreads = 256;

// grid (ceil(N / 64), ceil(T / 64)), block 256; each thread a 4x4 patch of the 64x64 output tile.
template <typename W>
__global__ void __launch_bounds__(kTileThreads) gemm_tiled_kernel(const float* x, const W* w, float* y, int64_t T,
                                                                  int64_t K, int64_t N) {
  __shared__ float xs[kTileK][kTile + 4];  // [k][token]
  __shared__ float ws[kTileK][kTile + 4];  // [k][column]
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
#pragma unroll
    for (int i = 0; i < kTile * kTileK / kTileThreads; ++i) {
      const int idx = threadIdx.x + i * kTileThreads;
      const int r = idx / kTileK, kk = idx % kTileK;
      const int64_t gk = k0 + kk;
      xs[kk][r] = (m0 + r < T && gk < K) ? x[(m0 + r) * K + gk] : 0.0f;
      ws[kk][r] = (n0 + r < N && gk < K) ? to_f32(w[(n0 + r) * K + gk]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = xs[kk][ty * 4 + i], b[i] = ws[kk][tx * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < T && n < N) y[m * N + n] = acc[i][j];
    }
}

template <int Lanes, typename W>
void launch_gemv(const Launch& l, const MatmulArgs& a) {
  const bool vec = a.K % 8 == 0 && reinterpret_cast<uintptr_t>(a.w) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
  const unsigned grid = blocks_for(a.N, kGemvThreads / Lanes);
  const W* w = static_cast<const W*>(a.w);
  const int T = int(a.T);
  auto go = [&](auto tr) {
    constexpr int TR = decltype(tr)::value;
    if (vec) gemv_kernel<Lanes, TR, W, true><<<grid, kGemvThreads, 0, l.stream>>>(a.x, w, a.y, T, a.K, a.N);
    else gemv_kernel<Lanes, TR, W, false><<<grid, kGemvThreads, 0, l.stream>>>(a.x, w, a.y, T, a.K, a.N);
  };
  if (T == 1) go(std::integral_constant<int, 1>{});
  else if (T <= 2) go(std::integral_constant<int, 2>{});
  else if (T <= 4) go(std::integral_constant<int, 4>{});
  else go(std::integral_constant<int, 8>{});
}

#if defined(DCUSERVE_CUDA)
// x [n] f32 -> hi, lo 16-bit with x ~= hi + lo.
template <typename H>
__global__ void split_kernel(const float* x, H* hi, H* lo, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    H h;
    from_f32(x[i], &h);
    hi[i] = h;
    from_f32(x[i] - to_f32(h), &lo[i]);
  }
}

#define CUBLAS_CHECK(expr)                                                                   \
  do {                                                                                       \
    cublasStatus_t st_ = (expr);                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS) fail_call(#expr, __FILE__, __LINE__, cublasGetStatusString(st_)); \
  } while (0)

template <typename H>
void blas_matmul(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  const int64_t n = a.T * a.K;
  H* hi = static_cast<H*>(scratch.get(size_t(2 * n) * sizeof(H)));
  H* lo = hi + n;
  split_kernel<H><<<unsigned(std::min<int64_t>(blocks_for(n, 256), 4096)), 256, 0, l.stream>>>(a.x, hi, lo, n);
  GPU_CHECK_LAUNCH();
  const cudaDataType_t type = std::is_same_v<H, Bf16> ? CUDA_R_16BF : CUDA_R_16F;
  auto handle = static_cast<cublasHandle_t>(l.blas);
  CUBLAS_CHECK(cublasSetStream(handle, l.stream));
  // Row-major y[T, N] = x[T, K] w[N, K]^T is column-major y^T[N, T] = w^T . x^T.
  const float one = 1.0f, zero = 0.0f;
  for (int part = 0; part < 2; ++part)
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(a.N), int(a.T), int(a.K), &one, a.w, type,
                              int(a.K), part == 0 ? hi : lo, type, int(a.K), part == 0 ? &zero : &one, a.y,
                              CUDA_R_32F, int(a.N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
#endif

}  // namespace

void launch_matmul(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  if (a.T == 0 || a.N == 0) return;
  with_elem_type(a.w_type, [&](auto e) {
    using W = decltype(e);
    if (a.T <= kGemvMaxTokens) {
      with_lanes(l.lanes, [&](auto lanes) { launch_gemv<decltype(lanes)::value, W>(l, a); });
      return;
    }
#if defined(DCUSERVE_CUDA)
    if constexpr (!std::is_same_v<W, float>) {
      if (a.T >= kBlasMinTokens && l.blas) return blas_matmul<W>(l, a, scratch);
    }
#endif
    const dim3 grid(blocks_for(a.N, kTile), blocks_for(a.T, kTile));
    gemm_tiled_kernel<W><<<grid, kTileThreads, 0, l.stream>>>(a.x, static_cast<const W*>(a.w), a.y, a.T, a.K, a.N);
  });
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
