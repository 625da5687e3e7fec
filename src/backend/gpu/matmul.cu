// y = x . w^T with f32 activations and F32/F16/BF16 or int8/int4 (backend/linear.h) weights, f32
// accumulation.
//  - T <= gemv_max_tokens, or T <= 16 on a narrow matrix (decode; see use_gemv): GEMV. A block owns
//    C output columns and its threads split K in 8-element chunks, so every weight row is streamed
//    exactly once (16-byte loads, C rows in flight per thread) for all T token rows, and even a
//    narrow matrix ([1024, 5120]) spreads over the GPU (split-K inside the block, reduced through
//    shared memory). On gfx906 F16 weights go through v_dot2_f32_f16 (the activations are rounded
//    to f16 for the dot, the sum stays f32); BF16 is widened by a shift (no bf16 arithmetic there).
//    Quantized weights take the GEMV up to kGemvMaxTokens rows (in CUDA's vendor-BLAS mode only the
//    rows gemv_max_tokens allows; above, up to 32 rows, the tensor-core kernel, which dequantizes as
//    it loads): each 8-code chunk is widened to f32 q - zero once for all token rows, exactly, and the
//    chunk's scale multiplies its dot products (on gfx906 the codes become f16 pairs by bit tricks,
//    exactly, and go through v_dot2_f32_f16).
//  - larger T, quantized weights: expanded into 16-bit weights (Launch::expanded), then as below.
//  - larger T, exact precision: a portable 64x64 shared-memory tiled kernel, f32 FMA.
//  - larger T, CUDA with vendor BLAS (bf16/f16 precision mode): up to 32 rows, the tensor-core kernel
//    of matmul_tensor_core.cu (activations split hi + lo, weights read once); beyond, the activations
//    are split into a high and a low part in the weight's 16-bit type (x = hi + lo) and two
//    cublasGemmEx calls run on tensor cores with f32 accumulation and output (one call of the
//    rounded activations in the medium precision mode, Launch::split_activations false).
//  - larger T, HIP builds that find rocBLAS (Hygon DTK, ROCm), F16 weights: the same split and two
//    rocblas_gemm_ex calls. Debian has no rocBLAS, so CI builds the portable path only.

#include <algorithm>

#include "backend/gpu/gemv_common.h"
#include "backend/gpu/kernels.h"

#if defined(DCUSERVE_CUDA)
#include <cublas_v2.h>
#elif defined(DCUSERVE_ROCBLAS)
#include <rocblas/rocblas.h>
#endif

namespace dcu::gpu {
namespace {

// CUDA, one token row: at most 48 registers, 10 blocks of 128 threads per SM. Left to the compiler
// (50-64 registers with the folded norm and accumulation), batch 1 lost 2-3 % on H200 against 10
// blocks (docs/PERFORMANCE_GPU.md, round 10). HIP's second bound means waves per SIMD: not set.
// Quantized weights: no such bound (their 8 columns of widened codes need the registers).
#if defined(DCUSERVE_CUDA)
#define DCU_GEMV_BOUNDS(TR, W) __launch_bounds__(kGemvThreads, (TR) == 1 && !kQuantized<W> ? 10 : 0)
#else
#define DCU_GEMV_BOUNDS(TR, W) __launch_bounds__(kGemvThreads)
#endif
// Output columns per block: C weight loads in flight per thread. (8 measured 3-7 % slower at T = 1 on
// the 27B shapes: fewer, longer blocks.) On CUDA quantized codes take 8 (up to 2 rows), so that a
// thread has as many bytes of int8 weights in flight as of 16-bit ones (H200, 27B int8 batch 1: 71.6 ->
// 85.2 tok/s); gfx906 keeps 4, where 8 needs 99-128 VGPRs (two waves per SIMD).
constexpr int kGemvColumns = 4;
#if defined(DCUSERVE_CUDA)
template <typename W, int TR> constexpr int kGemvColumnsOf = kQuantized<W> && TR <= 2 ? 8 : kGemvColumns;
#else
template <typename W, int TR> constexpr int kGemvColumnsOf = kGemvColumns;
#endif

// Eight consecutive weights widened to f32 (16-byte aligned source).
__device__ __forceinline__ void load8(const float* w, float* out) {
  const uint4 a = load16(w), b = load16(w + 4);
  const uint32_t words[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __uint_as_float(words[i]);
}
template <typename H>
__device__ __forceinline__ void load8(const H* w, float* out) {
  const uint4 u = load16(w);
  const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = widen_pair(words[i], H{});
    out[2 * i] = p.x, out[2 * i + 1] = p.y;
  }
}

#if defined(__gfx906__)
typedef _Float16 half2_t __attribute__((ext_vector_type(2)));
#endif

// Eight codes at a multiple of 8 as f32 q - zero (the chunk's scale multiplies their dot product).
__device__ __forceinline__ void load8(const Int8Code* p, float, float* out) {
#if defined(DCUSERVE_CUDA)
  const uint2 u = __ldcs(reinterpret_cast<const uint2*>(p));
#else
  const uint2 u = *reinterpret_cast<const uint2*>(p);
#endif
  const uint32_t words[2] = {u.x ^ 0x80808080u, u.y ^ 0x80808080u};  // q + 128 per byte
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) out[4 * i + j] = magic_float((words[i] >> (8 * j)) & 0xFFu) - 8388736.0f;
}
__device__ __forceinline__ void load8(const Int4Pair* p, float zero, float* out) {
#if defined(DCUSERVE_CUDA)
  const uint32_t w = __ldcs(reinterpret_cast<const unsigned int*>(p));
#else
  const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
#endif
  const float bias = 8388608.0f + zero;
#pragma unroll
  for (int j = 0; j < 4; ++j) {  // k = 2j in nibble j, k = 2j + 1 in nibble j + 4
    out[2 * j] = magic_float((w >> (4 * j)) & 0xFu) - bias;
    out[2 * j + 1] = magic_float((w >> (4 * j + 16)) & 0xFu) - bias;
  }
}

#if defined(DCUSERVE_CUDA)
__device__ __forceinline__ void load8(const Fp8Code* p, float, float* out) {
  const uint2 u = __ldcs(reinterpret_cast<const uint2*>(p));
#pragma unroll
  for (int j = 0; j < 8; ++j) out[j] = fp8_value((j < 4 ? u.x : u.y) >> (8 * (j % 4)));
}
#endif

#if defined(__gfx906__)
// Eight codes as four f16 pairs (k, k + 1) holding q - zero exactly (|q - zero| <= 255 fits f16's 11
// bits): the code goes into the mantissa of 1024 (0x6400), then one packed subtract.
__device__ __forceinline__ void code_pairs(const Int8Code* p, float, half2_t (&out)[4]) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const uint32_t words[2] = {u.x ^ 0x80808080u, u.y ^ 0x80808080u};  // q + 128 per byte
  const half2_t bias{_Float16(1152.0f), _Float16(1152.0f)};
#pragma unroll
  for (int i = 0; i < 2; ++i) {  // pairs (k, k + 1), (k + 2, k + 3) of each word
    const uint32_t w = words[i];
    out[2 * i] = __builtin_bit_cast(half2_t, (w & 0xFFu) | ((w << 8) & 0xFF0000u) | 0x64006400u) - bias;
    out[2 * i + 1] = __builtin_bit_cast(half2_t, ((w >> 16) & 0xFFu) | ((w >> 8) & 0xFF0000u) | 0x64006400u) - bias;
  }
}
__device__ __forceinline__ void code_pairs(const Int4Pair* p, float zero, half2_t (&out)[4]) {
  const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
  const _Float16 b = _Float16(1024.0f + zero);
  const half2_t bias{b, b};
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = __builtin_bit_cast(half2_t, ((w >> (4 * j)) & 0x000F000Fu) | 0x64006400u) - bias;
}
#endif


// grid (sum of ceil(N_p / C); ceil(N / (C / 2)) for swiglu), block kGemvThreads. x [T, K]; TR >= T
// token rows.
// Vec: K % 8 == 0 and 16-byte aligned rows (thread i takes chunks i, i + threads, ...); otherwise
// element-wise over K.
// Norm (fusion.norm_w set): x is the residual stream and the block multiplies rms_norm(x) (1 + norm_w):
// it takes x (1 + norm_w) into the dot products and sums each row's squares alongside (the block reads
// all of x anyway), then scales the row's sums by rsqrt(mean(x^2) + eps). A template parameter: the
// norm's registers (64 against 44) would cost the other GEMVs occupancy (27B batch 1 -6 %).
// fusion.accumulate: y += sums.
template <int Lanes, int TR, int C, typename W, bool Vec, bool Norm>
__global__ void DCU_GEMV_BOUNDS(TR, W) gemv_kernel(const float* __restrict__ x, const GemvParts<W> parts, int T,
                                                int64_t K) {
  __shared__ float partial[kGemvThreads / Lanes][C * TR + TR];  // column sums, then row squares
  const GemvBlock b = gemv_block<W, C>(parts);
  constexpr int E = kCodesPerElement<W>;
  const GemvRows<W, C> rows = gemv_rows<W, C>(parts, b, K);
  gemv_start(rows, K, 8);
  float acc[C][TR], squares[TR];
  zero_sums(acc, squares);
  const GemvFusion& f = parts.fusion;
  // x's chunk of token row t at k, normalised but for the row scale when fusing the norm.
  auto x8 = [&](int t, int64_t k, const float (&nw)[8], float4& a, float4& b) {
    const float* xp = x + int64_t(t) * K + k;
    a = reinterpret_cast<const float4*>(xp)[0], b = reinterpret_cast<const float4*>(xp)[1];
    if constexpr (Norm) {
      squares[t] += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z + b.w * b.w;
      a.x *= nw[0], a.y *= nw[1], a.z *= nw[2], a.w *= nw[3], b.x *= nw[4], b.y *= nw[5], b.z *= nw[6], b.w *= nw[7];
    }
  };

  if constexpr (Vec) {
    for (int64_t k = int64_t(threadIdx.x) * 8; k < K; k += int64_t(kGemvThreads) * 8) {
      float nw[8];  // 1 + norm_w at k
      if constexpr (Norm) {
        load8_norm(f.norm_w, f.norm_type, k, nw);
#pragma unroll
        for (int i = 0; i < 8; ++i) nw[i] += 1.0f;
      }
#if defined(__gfx906__)
      if constexpr (kQuantized<W>) {
        const int64_t g = k / parts.group;
        half2_t q[C][4];
        float scale[C];
#pragma unroll
        for (int c = 0; c < C; ++c) {
          code_pairs(rows.weights(c) + k / E, float(rows.zero(c, g)), q[c]);
          scale[c] = rows.scale(c, g);
        }
#pragma unroll
        for (int t = 0; t < TR; ++t) {
          if (t < T) {
            float4 a, b;
            x8(t, k, nw, a, b);
            const half2_t xp[4] = {half2_t{_Float16(a.x), _Float16(a.y)}, half2_t{_Float16(a.z), _Float16(a.w)},
                                   half2_t{_Float16(b.x), _Float16(b.y)}, half2_t{_Float16(b.z), _Float16(b.w)}};
#pragma unroll
            for (int c = 0; c < C; ++c) {
              float s = 0.0f;  // v_dot2_f32_f16 over the chunk, then its scale
#pragma unroll
              for (int i = 0; i < 4; ++i) s = __builtin_amdgcn_fdot2(q[c][i], xp[i], s, false);
              acc[c][t] = fmaf(s, scale[c], acc[c][t]);
            }
          }
        }
        continue;
      }
      if constexpr (std::is_same_v<W, F16>) {
        uint4 wb[C];
#pragma unroll
        for (int c = 0; c < C; ++c) wb[c] = load16(rows.weights(c) + k);
#pragma unroll
        for (int t = 0; t < TR; ++t) {
          if (t < T) {
            float4 a, b;
            x8(t, k, nw, a, b);
            const half2_t x0{_Float16(a.x), _Float16(a.y)}, x1{_Float16(a.z), _Float16(a.w)};
            const half2_t x2{_Float16(b.x), _Float16(b.y)}, x3{_Float16(b.z), _Float16(b.w)};
#pragma unroll
            for (int c = 0; c < C; ++c) {
              float s = acc[c][t];  // v_dot2_f32_f16: f16 products, f32 accumulation
              s = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wb[c].x), x0, s, false);
              s = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wb[c].y), x1, s, false);
              s = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wb[c].z), x2, s, false);
              acc[c][t] = __builtin_amdgcn_fdot2(__builtin_bit_cast(half2_t, wb[c].w), x3, s, false);
            }
          }
        }
        continue;
      }
#endif
      float wv[C][8], scale[C];
      if constexpr (kQuantized<W>) {
        const int64_t g = k / parts.group;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          load8(rows.weights(c) + k / E, float(rows.zero(c, g)), wv[c]);
          scale[c] = rows.scale(c, g);
        }
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) load8(rows.weights(c) + k, wv[c]);
      }
#pragma unroll
      for (int t = 0; t < TR; ++t) {
        if (t < T) {
          float4 a, b;
          x8(t, k, nw, a, b);
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const float dot = wv[c][0] * a.x + wv[c][1] * a.y + wv[c][2] * a.z + wv[c][3] * a.w + wv[c][4] * b.x +
                              wv[c][5] * b.y + wv[c][6] * b.z + wv[c][7] * b.w;
            if constexpr (kQuantized<W>) acc[c][t] = fmaf(scale[c], dot, acc[c][t]);
            else acc[c][t] += dot;
          }
        }
      }
    }
  } else if constexpr (!kQuantized<W>) {  // (quantized weights always take the vector path)
    for (int64_t k = threadIdx.x; k < K; k += kGemvThreads) {
      float wk[C];
#pragma unroll
      for (int c = 0; c < C; ++c) wk[c] = to_f32(rows.weights(c)[k]);
      const float nw = Norm ? 1.0f + load_norm(f.norm_w, f.norm_type, k) : 1.0f;
#pragma unroll
      for (int t = 0; t < TR; ++t)
        if (t < T) {
          const float xv = x[int64_t(t) * K + k];
          if constexpr (Norm) squares[t] += xv * xv;
#pragma unroll
          for (int c = 0; c < C; ++c) acc[c][t] += wk[c] * xv * nw;
        }
    }
  }

  // Split-K reduction: logical warps, then across the block's warps through shared memory.
  finish_gemv<Lanes, TR, C, Norm>(acc, squares, partial, parts, b, T, K);
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

// count matmuls of one x, or (swiglu) group[0] = gate and group[1] = up into group[0].y.
template <int Lanes, typename W>
void launch_gemv(const Launch& l, const MatmulArgs* group, int count, bool swiglu = false,
                 const GemvFusion& fusion = {}) {
  const MatmulArgs& a = group[0];  // x, T and K are the group's
  bool vec = a.K % 8 == 0 && aligned16(a.x) && (!fusion.norm_w || aligned16(fusion.norm_w));
  for (int p = 0; p < count; ++p) vec = vec && aligned16(group[p].w);
  const int T = int(a.T);
  auto go = [&](auto tr) {
    constexpr int TR = decltype(tr)::value, C = kGemvColumnsOf<W, TR>;
    GemvParts<W> parts;
    const unsigned grid = gemv_parts(group, count, swiglu, fusion, C, parts);
    auto launch = [&](auto vector, auto norm) {
      constexpr bool Vec = decltype(vector)::value, Norm = decltype(norm)::value;
      launch_overlapping(l, gemv_kernel<Lanes, TR, C, W, Vec, Norm>, grid, kGemvThreads, 0, a.x, parts, T, a.K);
    };
    using std::bool_constant;
    if constexpr (kQuantized<W>) {  // Linear's checks make K a multiple of 32; the codes are allocations
      if (!vec) fail_call("launch_gemv", __FILE__, __LINE__, "quantized weights need 16-byte aligned rows of x");
      if (fusion.norm_w) launch(bool_constant<true>{}, bool_constant<true>{});
      else launch(bool_constant<true>{}, bool_constant<false>{});
    } else if (fusion.norm_w) {
      if (vec) launch(bool_constant<true>{}, bool_constant<true>{});
      else launch(bool_constant<false>{}, bool_constant<true>{});
    } else {
      if (vec) launch(bool_constant<true>{}, bool_constant<false>{});
      else launch(bool_constant<false>{}, bool_constant<false>{});
    }
  };
  if (T == 1) go(std::integral_constant<int, 1>{});
  else if (T <= 2) go(std::integral_constant<int, 2>{});
  else if (T <= 4) go(std::integral_constant<int, 4>{});
  else if (T <= 8) go(std::integral_constant<int, 8>{});
  else go(std::integral_constant<int, kGemvMaxTokens>{});
}

// launch_gemv for the group's weight dtype and the launch's warp width.
void run_gemv(const Launch& l, const MatmulArgs* group, int count, bool swiglu = false,
              const GemvFusion& fusion = {}) {
  auto go = [&](auto e) {
    with_lanes(l.lanes, [&](auto lanes) {
      launch_gemv<decltype(lanes)::value, decltype(e)>(l, group, count, swiglu, fusion);
    });
  };
  if (l.int8_activations && integer_codes(group[0].format))
    return launch_int8_activation_gemv(l, group, count, swiglu, fusion);
  switch (group[0].format) {
    case WeightFormat::Int8: go(Int8Code{}); break;
    case WeightFormat::Int4: go(Int4Pair{}); break;
    case WeightFormat::Fp8:
#if defined(DCUSERVE_CUDA)
      go(Fp8Code{});
#else
      fail_call("matmul", __FILE__, __LINE__, "FP8 weights on a HIP GPU (the loader converts them to int8)");
#endif
      break;
    case WeightFormat::Dense: with_elem_type(group[0].w_type, go); break;
  }
  GPU_CHECK_LAUNCH();
}

// x [n] f32 -> hi, lo in the weights' 16-bit type with x ~= hi + lo (each rounded to nearest even);
// lo null: x rounded to hi only. quads: x is 16-byte aligned and n a multiple of 4, so a thread
// converts four values per step (one 16-byte load, 8-byte stores; the prompt-sized splits are
// bandwidth-bound).
template <typename H>
__global__ void split_kernel(const float* x, H* hi, H* lo, int64_t n, bool quads) {
  start_after_previous_kernel();
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, stride = int64_t(gridDim.x) * blockDim.x;
  auto one = [&](float v, H& h, H& l) {
    from_f32(v, &h);
    from_f32(v - to_f32(h), &l);
  };
  if (quads) {
    for (int64_t q = first; q < n / 4; q += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[q];
      H h[4], l[4];
      one(v.x, h[0], l[0]), one(v.y, h[1], l[1]), one(v.z, h[2], l[2]), one(v.w, h[3], l[3]);
      auto pack = [](const H (&p)[4]) {
        return make_uint2(p[0].bits | uint32_t(p[1].bits) << 16, p[2].bits | uint32_t(p[3].bits) << 16);
      };
      reinterpret_cast<uint2*>(hi)[q] = pack(h);
      if (lo) reinterpret_cast<uint2*>(lo)[q] = pack(l);
    }
    return;
  }
  for (int64_t i = first; i < n; i += stride) {
    H l;
    one(x[i], hi[i], l);
    if (lo) lo[i] = l;
  }
}

template <typename H>
void split(const Launch& l, const float* x, H* hi, H* lo, int64_t n) {
  // hi, lo: scratch, hi 16-byte aligned and lo = hi + n (or null)
  const bool quads = n % 4 == 0 && aligned16(x);
  const int64_t work = quads ? n / 4 : n;
  launch_overlapping(l, split_kernel<H>, unsigned(std::min<int64_t>(blocks_for(work, 256), 8192)), 256, 0, x, hi, lo,
                     n, quads);
  GPU_CHECK_LAUNCH();
}

#if defined(DCUSERVE_CUDA)
#define CUBLAS_CHECK(expr)                                                                   \
  do {                                                                                       \
    cublasStatus_t st_ = (expr);                                                             \
    if (st_ != CUBLAS_STATUS_SUCCESS) fail_call(#expr, __FILE__, __LINE__, cublasGetStatusString(st_)); \
  } while (0)

// Two tensor-core GEMMs, y = w . hi + w . lo: rounding the activations to 16 bits once moved logits
// of the test models by up to 0.9 (tiny) and 0.08 (demo); with the low part they stay near 1e-3.
// Without split_activations, one GEMM of the rounded activations (--matmul-precision medium).
template <typename H>
void blas_matmul(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  const int64_t n = a.T * a.K;
  const int parts = l.split_activations ? 2 : 1;
  H* hi = static_cast<H*>(scratch.get(size_t(parts * n) * sizeof(H)));
  H* lo = parts == 2 ? hi + n : nullptr;
  split<H>(l, a.x, hi, lo, n);
  const cudaDataType_t type = std::is_same_v<H, Bf16> ? CUDA_R_16BF : CUDA_R_16F;
  auto handle = static_cast<cublasHandle_t>(l.blas);
  CUBLAS_CHECK(cublasSetStream(handle, l.stream));
  // Row-major y[T, N] = x[T, K] w[N, K]^T is column-major y^T[N, T] = w^T . x^T.
  const float one = 1.0f, zero = 0.0f;
  for (int part = 0; part < parts; ++part)
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(a.N), int(a.T), int(a.K), &one, a.w, type,
                              int(a.K), part == 0 ? hi : lo, type, int(a.K), part == 0 ? &zero : &one, a.y,
                              CUDA_R_32F, int(a.N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
#elif defined(DCUSERVE_ROCBLAS)
#define ROCBLAS_CHECK(expr)                                                                  \
  do {                                                                                       \
    rocblas_status st_ = (expr);                                                             \
    if (st_ != rocblas_status_success) fail_call(#expr, __FILE__, __LINE__, rocblas_status_to_string(st_)); \
  } while (0)

// The same two GEMMs through rocBLAS (Hygon DTK / ROCm builds that find it): F16 weights only, the
// type gfx906 multiplies natively (--dtype float16).
void blas_matmul_f16(const Launch& l, const MatmulArgs& a, Scratch& scratch) {
  const int64_t n = a.T * a.K;
  const int parts = l.split_activations ? 2 : 1;
  F16* hi = static_cast<F16*>(scratch.get(size_t(parts * n) * sizeof(F16)));
  F16* lo = parts == 2 ? hi + n : nullptr;
  split<F16>(l, a.x, hi, lo, n);
  auto handle = static_cast<rocblas_handle>(l.blas);
  ROCBLAS_CHECK(rocblas_set_stream(handle, l.stream));
  // Row-major y[T, N] = x[T, K] w[N, K]^T is column-major y^T[N, T] = w^T . x^T.
  const float one = 1.0f, zero = 0.0f;
  for (int part = 0; part < parts; ++part)
    ROCBLAS_CHECK(rocblas_gemm_ex(handle, rocblas_operation_transpose, rocblas_operation_none, int(a.N), int(a.T),
                                  int(a.K), &one, a.w, rocblas_datatype_f16_r, int(a.K), part == 0 ? hi : lo,
                                  rocblas_datatype_f16_r, int(a.K), part == 0 ? &zero : &one, a.y,
                                  rocblas_datatype_f32_r, int(a.N), a.y, rocblas_datatype_f32_r, int(a.N),
                                  rocblas_datatype_f32_r, rocblas_gemm_algo_standard, 0, 0));
}
#endif

// GEMV or a GEMM, by shape. Up to gemv_max_tokens rows always take the GEMV. Beyond, the tensor-core
// kernel takes every matrix it fits (from 3 rows: gemv_max_tokens = 2 in gpu_options_for_dtype), narrow
// ones included: it splits K across the GPU and joins the group's launch, where the GEMV gave GDN a/b
// [48, 5120] 24 blocks (17 us at 8 rows on an H200, docs/PERFORMANCE_GPU.md round 11). Otherwise,
// and in the medium precision mode (its activations rounded to bf16 moved the tiny model's greedy
// continuations when these took them too, round 11), narrow matrices (N <= kGemvNarrowColumns output
// rows) take the GEMV up to kGemvMaxTokens rows: cuBLAS hi + lo costs ~40 us on k/v_proj [1024, 5120]
// at any T while the GEMV takes 9.3 / 13.2 / 21.6 us at T = 4 / 8 / 16 (round 2).
constexpr int64_t kGemvNarrowColumns = 1024;

// The integer GEMV (int8 activations) against the tensor-core kernel on rounded activations, H100:
// q_proj [12288, 5120] int8 34.4 vs 33.5 us at 3 rows, 37.0 vs 35.2 at 4, 54.5 vs 36.7 at 8
// (docs/PERFORMANCE.md, "Int8 activations"). Without tensor cores (gfx906) the GEMV takes its 16 rows.
constexpr int64_t kInt8GemvRowsBesideTensorCores = 4;

// Whether the tensor-core kernel takes a matmul (CUDA's vendor-BLAS mode, shapes it fits).
bool tensor_cores_take(const Launch& l, const MatmulArgs& a) {
#if defined(DCUSERVE_CUDA)
  return l.tensor_cores && tensor_core_matmul_fits(a);
#else
  return false;
#endif
}

bool use_gemv(const Launch& l, const MatmulArgs& a) {
  // Quantized: the GEMV for the rows it takes (and its fusions), the tensor-core kernel beyond where
  // it applies (its launches of split, multiply and sum cost more than the GEMV at 1-2 rows), else
  // the GEMV up to its 16 rows. With int8 activations the GEMV multiplies codes and keeps up with
  // the tensor-core kernel to kInt8GemvRowsBesideTensorCores rows.
  if (a.format != WeightFormat::Dense)
    return gemv_takes_all(l.gemv_max_tokens, a.T) ||
           (a.T <= kGemvMaxTokens &&
            (!tensor_cores_take(l, a) ||
             (l.int8_activations && integer_codes(a.format) && a.T <= kInt8GemvRowsBesideTensorCores)));
  return gemv_takes_all(l.gemv_max_tokens, a.T) ||
         (a.T <= kGemvMaxTokens && a.N <= kGemvNarrowColumns && !(l.split_activations && tensor_cores_take(l, a)));
}

}  // namespace

bool kernels_can_overlap() {
#if defined(DCUSERVE_CUDA)
  // The device code that runs must have been built for sm_90+ (a binary for an older architecture
  // running on a newer GPU has no wait_for_previous_kernel in it).
  cudaFuncAttributes attributes{};
  const auto kernel = gemv_kernel<32, 1, kGemvColumns, Bf16, true, false>;
  return cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess && attributes.binaryVersion >= 90;
#else
  return false;
#endif
}

void launch_split16(const Launch& l, const float* x, void* hi, void* lo, int64_t n, DType type) {
  if (type == DType::BF16) split<Bf16>(l, x, static_cast<Bf16*>(hi), static_cast<Bf16*>(lo), n);
  else split<F16>(l, x, static_cast<F16*>(hi), static_cast<F16*>(lo), n);
}

bool gemv_takes_all(int gemv_max_tokens, int64_t T) {
  return T >= 1 && T <= std::min<int64_t>(gemv_max_tokens, kGemvMaxTokens);
}

void launch_norm_matmul_group(const Launch& l, const MatmulArgs* group, int count, bool swiglu,
                              const GemvFusion& norm) {
  if (group[0].T == 0) return;
  if (!gemv_takes_all(l.gemv_max_tokens, group[0].T))
    fail_call("norm_matmul_group", __FILE__, __LINE__, "more rows than the GEMV takes");
  run_gemv(l, group, count, swiglu, norm);
}

void launch_matmul_accumulate(const Launch& l, const MatmulArgs& a) {
  if (a.T == 0 || a.N == 0) return;
  if (!gemv_takes_all(l.gemv_max_tokens, a.T))
    fail_call("matmul_accumulate", __FILE__, __LINE__, "more rows than the GEMV takes");
  GemvFusion accumulate;
  accumulate.accumulate = true;
  run_gemv(l, &a, 1, false, accumulate);
}

void launch_gate_up_swiglu(const Launch& l, const MatmulArgs& gate, const MatmulArgs& up, float* out,
                           Scratch& scratch) {
  if (gate.T == 0 || gate.N == 0) return;
  if (use_gemv(l, gate)) {  // one pass: the GEMV's epilogue applies silu(gate) * up
    MatmulArgs fused[2] = {gate, up};
    fused[0].y = out;
    run_gemv(l, fused, 2, true);
    return;
  }
  const MatmulArgs pair[2] = {gate, up};
  launch_matmul_group(l, pair, 2, scratch);
  launch_swiglu(l, gate.y, up.y, out, gate.T * gate.N);
}

void launch_matmul_group(const Launch& l, const MatmulArgs* group, int count, Scratch& scratch) {
  // Each matmul goes to the GEMV or to the larger kernels by its shape; each set runs as one launch
  // where its kernel takes groups (the GEMV, the tensor-core kernel).
  MatmulArgs gemv[kMaxMatmulGroup], larger[kMaxMatmulGroup];
  int gemv_count = 0, larger_count = 0;
  for (int i = 0; i < count; ++i) {
    const MatmulArgs& a = group[i];
    if (a.T == 0 || a.N == 0) continue;
    if (use_gemv(l, a)) gemv[gemv_count++] = a;
    else larger[larger_count++] = a;
  }
  if (gemv_count > 0) run_gemv(l, gemv, gemv_count);
  if (larger_count == 0) return;
#if defined(DCUSERVE_CUDA)
  // (rounding the activations itself with int8_activations)
  if (larger[0].format != WeightFormat::Dense &&
      std::all_of(larger, larger + larger_count, [&](const MatmulArgs& a) { return tensor_cores_take(l, a); }))
    return launch_tensor_core_matmul(l, larger, larger_count, scratch);
#endif
  if (l.int8_activations && integer_codes(larger[0].format)) {  // the rounded values, for the dense kernels
    const float* rounded = launch_round_activations(l, larger[0].x, larger[0].T, larger[0].K);
    for (int i = 0; i < larger_count; ++i) larger[i].x = rounded;
  }
  if (larger[0].format != WeightFormat::Dense) {
    // Prompt-sized: each weight expanded into the type the dense kernel takes (the vendor GEMMs: bf16
    // on CUDA, f16 on rocBLAS; the exact-precision tiled kernel: f32, exact), then that kernel. The
    // expansion reads the codes once and writes 2 or 4 bytes a weight: small next to a GEMM of this
    // many rows.
#if defined(DCUSERVE_CUDA)
    const DType expanded_type = l.blas ? DType::BF16 : DType::F32;
#else
    const DType expanded_type = l.blas ? DType::F16 : DType::F32;
#endif
    if (!l.expanded) fail_call("launch_matmul_group", __FILE__, __LINE__, "no scratch for expanded weights");
    for (int i = 0; i < larger_count; ++i) {
      MatmulArgs dense = larger[i];
      void* weights = l.expanded->get(size_t(dense.N * dense.K) * dtype_size(expanded_type));
      launch_expand_weights(l, larger[i], weights, expanded_type);
      dense.w = weights, dense.w_type = expanded_type, dense.format = WeightFormat::Dense;
      dense.scales = nullptr, dense.zeros = nullptr, dense.group = 0;
      launch_matmul_group(l, &dense, 1, scratch);
    }
    return;
  }
  with_elem_type(group[0].w_type, [&](auto e) {
    using W = decltype(e);
#if defined(DCUSERVE_CUDA)
    if constexpr (!std::is_same_v<W, float>) {
      if (l.tensor_cores && std::all_of(larger, larger + larger_count, tensor_core_matmul_fits))
        return launch_tensor_core_matmul(l, larger, larger_count, scratch);
      if (l.blas) {
        for (int i = 0; i < larger_count; ++i) blas_matmul<W>(l, larger[i], scratch);
        return;
      }
    }
#elif defined(DCUSERVE_ROCBLAS)
    if constexpr (std::is_same_v<W, F16>) {
      if (l.blas) {
        for (int i = 0; i < larger_count; ++i) blas_matmul_f16(l, larger[i], scratch);
        return;
      }
    }
#endif
    for (int i = 0; i < larger_count; ++i) {
      const MatmulArgs& a = larger[i];
      const dim3 grid(blocks_for(a.N, kTile), blocks_for(a.T, kTile));
      launch_kernel(l, gemm_tiled_kernel<W>, grid, kTileThreads, 0, a.x, static_cast<const W*>(a.w), a.y, a.T, a.K,
                    a.N);
    }
  });
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
