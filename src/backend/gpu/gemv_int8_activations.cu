// Matmuls of quantized weights with int8 activations (Launch::int8_activations; the rounding is
// backend/activation_quantization.h's, which the CPU reference applies too):
//  - quantize_activations_kernel: x [T, K] (through the folded zero-centred RMSNorm when the decode
//    step folds norms into its matmuls) -> codes [T, K] int8 + one f32 scale per 32 k, or the values
//    s q for the paths that multiply floats: as f32 (expanded weights) or split into 16-bit halves
//    hi + lo (the tensor-core kernel's operands, so no split kernel runs after it).
//  - gemv_int8_kernel, the decode rows (T <= kGemvMaxTokens): a block owns C output columns and its
//    threads split K in 16-k chunks (chunk i, i + kGemvThreads, ...), so every weight row is streamed
//    once for all rows. For int8 weights at one row the block quantizes the f32 activations it reads
//    in registers (two lanes share a 32-k block; the norm folds in as in matmul.cu's GEMV), so a
//    decode step of one sequence has no kernel between a GEMV and the next; otherwise the quantize
//    kernel runs first.
//    Per chunk, column and row, 16 weight codes meet 16 activation codes in four dp4a /
//    v_dot4_i32_i8, an exact int32 sum that the weight group's scale times the activation block's
//    scale turns into f32: one instruction per four weights and row instead of widening every code
//    to a float (docs/PERFORMANCE.md: the f32-activation GEMV of int8 weights spends ~3.5
//    instructions a byte on the H200 and int4 ~7). Int4 codes are 0..15 with a zero point z:
//    sum (q - z) x = sum q x - z sum x; the canonical nibble layout (linear.h) holds k {0, 4, 1, 5}
//    of each 8 in the low nibbles of a word's bytes and {2, 6, 3, 7} in the high ones, so the
//    activation bytes are permuted to match, once per chunk and row for all C columns.

#include "backend/gpu/gemv_common.h"
#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kBlock = 32;               // activation codes per scale (kActivationBlock)
constexpr int kQuantizeThreads = 256;
// grid (ceil(K / kQuantizeThreads), T), block kQuantizeThreads: one 32-k block per warp (warps of 32
// lanes, a lane per k). These launches are short and latency-bound, so the most blocks win, even where
// every block with a norm sums its row's squares again: for the codes, against 8 blocks of 32 per
// warp, H100 27B int8 batch 2 145.8 -> 157.0 tok/s, the 3-row MTP verify step 1.29x -> 1.22x a 1-row
// step (docs/PERFORMANCE.md); for the rounded values (with the split fused in), 27B int8 decodes 8 rows
// as fast with int8 activations as with f32 (H200: 446 vs 444 tok/s).
// x [T, K]; norm_w [K] or null. Out int8_t: out = codes [T, K], scales [T, K / 32]; float: out = the
// rounded values [T, K]; Bf16 / F16: those values as out + lo [T, K] (lo null: out only).
template <typename Out>
__global__ void __launch_bounds__(kQuantizeThreads)
    quantize_activations_kernel(const float* __restrict__ x, int64_t K, const void* norm_w, DType norm_type,
                                float eps, Out* __restrict__ out, Out* __restrict__ lo, float* __restrict__ scales) {
  __shared__ float scratch[kQuantizeThreads / 32];
  start_after_previous_kernel();
  const float* xr = x + int64_t(blockIdx.y) * K;
  float inv_rms = 1.0f;
  if (norm_w) {  // every block of the row sums its squares (K floats from L2) rather than wait for another
    float ss = 0.0f;
    for (int64_t k = threadIdx.x; k < K; k += kQuantizeThreads) ss += xr[k] * xr[k];
    inv_rms = 1.0f / sqrtf(block_sum<32>(ss, scratch) / float(K) + eps);
  }
  const int lane = threadIdx.x % 32;
  const int64_t k = int64_t(blockIdx.x) * kQuantizeThreads + threadIdx.x;
  if (k - lane >= K) return;  // whole blocks: K is a multiple of 32
  float v = xr[k];
  if (norm_w) {  // as the CPU's rms_norm: x * inv_rms * (1 + w)
    v = v * inv_rms * (load_norm(norm_w, norm_type, k) + 1.0f);
  }
  const float a = physical_reduce<32>(fabsf(v), MaxOp{});
  const float inv = a > 0.0f ? 127.0f / a : 0.0f;
  const float q = fminf(fmaxf(rintf(v * inv), -127.0f), 127.0f);
  const int64_t at = int64_t(blockIdx.y) * K + k;
  if constexpr (std::is_same_v<Out, int8_t>) {
    out[at] = int8_t(q);
    if (lane == 0) scales[at / kBlock] = a / 127.0f;
  } else if constexpr (std::is_same_v<Out, float>) {
    out[at] = q * (a / 127.0f);
  } else {
    const float r = q * (a / 127.0f);
    from_f32(r, &out[at]);
    if (lo) from_f32(r - to_f32(out[at]), &lo[at]);
  }
}

// The 16 weight codes of column row `w` at chunk k as four words that line up with activation words:
// int8 as stored; int4 as the low and high nibbles of its two 8-k words (bytes 0..15, zero-extended).
__device__ __forceinline__ void chunk_codes(const Int8Code* w, int64_t k, int (&out)[4]) {
  const uint4 u = load16(w + k);
  out[0] = int(u.x), out[1] = int(u.y), out[2] = int(u.z), out[3] = int(u.w);
}
__device__ __forceinline__ void chunk_codes(const Int4Pair* w, int64_t k, int (&out)[4]) {
#if defined(DCUSERVE_CUDA)
  const uint2 u = __ldcs(reinterpret_cast<const uint2*>(w + k / 2));
#else
  const uint2 u = *reinterpret_cast<const uint2*>(w + k / 2);
#endif
  out[0] = int(u.x & 0x0F0F0F0Fu), out[1] = int((u.x >> 4) & 0x0F0F0F0Fu);
  out[2] = int(u.y & 0x0F0F0F0Fu), out[3] = int((u.y >> 4) & 0x0F0F0F0Fu);
}

// Where a GEMV block finds the activations: f32 rows it quantizes itself (x, with the folded norm's
// weight), or the codes and scales the quantize kernel wrote.
struct GemvActivations {
  const float* x = nullptr;       // [T, K] f32, or null: codes
  const int8_t* codes = nullptr;  // [T, K]
  const float* scales = nullptr;  // [T, K / 32]
};

// 1.5 * 2^23 + rint(v) for |v| < 2^22 (ties to even): the integer in the low mantissa bits. An add of its
// own, never contracted with the multiply before it (a fused multiply-add would round once, not twice).
__device__ __forceinline__ float round_to_integer(float v) {
#if defined(DCUSERVE_CUDA)
  return __fadd_rn(v, 12582912.0f);  // 1.5 * 2^23
#else
#pragma clang fp contract(off)
  return v + 12582912.0f;
#endif
}

// Four int8 codes from the low bytes of four floats holding 1.5 * 2^23 + q (two's complement bytes).
__device__ __forceinline__ int pack_codes(float a, float b, float c, float d) {
  const uint32_t ab = __byte_perm(__float_as_uint(a), __float_as_uint(b), 0x0040);
  const uint32_t cd = __byte_perm(__float_as_uint(c), __float_as_uint(d), 0x0040);
  return int(__byte_perm(ab, cd, 0x5410));
}

// The chunk's 16 activations of row t quantized in registers: this lane's 16 values and the next (or
// previous) lane's 16 make one block of 32, whose max the two lanes exchange. The arithmetic is the
// CPU's (backend/activation_quantization.h): inv = 127 / max, q = rint(fl(x * inv)), the rounding done
// by adding 1.5 * 2^23.
// With a norm, x * (1 + norm_w) is quantized and the row's sum of squares grows; the row's rsqrt scale
// multiplies the finished sums (quantization is scale-invariant).
template <bool Norm>
__device__ __forceinline__ float quantize_chunk(const float* x, const GemvFusion& f, int64_t k, int (&words)[4],
                                                float& squares) {
  float v[16];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float4 q = reinterpret_cast<const float4*>(x + k)[i];
    v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
  }
  if constexpr (Norm) {
    float nw[16];
    load8_norm(f.norm_w, f.norm_type, k, nw);
    load8_norm(f.norm_w, f.norm_type, k + 8, nw + 8);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      squares = fmaf(v[i], v[i], squares);
      v[i] *= nw[i] + 1.0f;
    }
  }
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) a = fmaxf(a, fabsf(v[i]));
#if defined(DCUSERVE_CUDA)
  a = fmaxf(a, __shfl_xor_sync(__activemask(), a, 1));
#else
  a = fmaxf(a, __shfl_xor(a, 1));
#endif
  const float inv = a > 0.0f ? 127.0f / a : 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = round_to_integer(v[i] * inv);
#pragma unroll
  for (int i = 0; i < 4; ++i) words[i] = pack_codes(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  return a / 127.0f;
}

// CUDA, rows quantized in the block (FromFloat, int8 at one row): at most 128 registers, 4 blocks of
// 128 threads per SM. Left to the compiler they took 118-150 (3 blocks); bounded, the H100 decoded 27B
// int8 at batch 1 3 % faster (docs/PERFORMANCE.md, "One NVIDIA H100, 2026-12-06 (03:58-04:38 UTC)").
// HIP's second bound means waves per SIMD: not set.
#if defined(DCUSERVE_CUDA)
#define DCU_INT8_GEMV_BOUNDS(FromFloat) __launch_bounds__(kGemvThreads, (FromFloat) ? 4 : 0)
#else
#define DCU_INT8_GEMV_BOUNDS(FromFloat) __launch_bounds__(kGemvThreads)
#endif

// grid (sum of ceil(N_p / C); ceil(N / (C / 2)) for swiglu), block kGemvThreads; TR >= T token rows, K a
// multiple of 32 (every quantized weight's). FromFloat: the block quantizes x itself (a.x; the folded
// norm too when Norm), else it reads the quantize kernel's codes.
template <int Lanes, int TR, int C, typename W, bool FromFloat, bool Norm>
__global__ void DCU_INT8_GEMV_BOUNDS(FromFloat) gemv_int8_kernel(const GemvActivations in, const GemvParts<W> parts,
                                                                int T, int64_t K) {
  constexpr bool kInt4 = std::is_same_v<W, Int4Pair>;
  __shared__ float partial[kGemvThreads / Lanes][C * TR + TR];
  const GemvBlock b = gemv_block<W, C>(parts);
  const GemvRows<W, C> rows = gemv_rows<W, C>(parts, b, K);
  gemv_start(rows, K, 16);

  float acc[C][TR], squares[TR];
  zero_sums(acc, squares);
  for (int64_t k = int64_t(threadIdx.x) * 16; k < K; k += int64_t(kGemvThreads) * 16) {
    const int64_t g = k / parts.group;
    int q[C][4];
    float scale[C];
    int zero[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      chunk_codes(rows.weights(c), k, q[c]);
      scale[c] = rows.scale(c, g);
      zero[c] = kInt4 ? rows.zero(c, g) : 0;
    }
#pragma unroll
    for (int t = 0; t < TR; ++t) {
      if (t < T) {
        int xw[4];
        float sx;
        if constexpr (FromFloat) {
          sx = quantize_chunk<Norm>(in.x + int64_t(t) * K, parts.fusion, k, xw, squares[t]);
        } else {
          const uint4 xv = *reinterpret_cast<const uint4*>(in.codes + int64_t(t) * K + k);
          xw[0] = int(xv.x), xw[1] = int(xv.y), xw[2] = int(xv.z), xw[3] = int(xv.w);
          sx = in.scales[(int64_t(t) * K + k) / kBlock];
        }
        int x_sum = 0;  // int4: sum of the chunk's activation codes, for the zero points
        if constexpr (kInt4) {  // the activation bytes in the nibbles' k order
          const uint32_t x0 = uint32_t(xw[0]), x1 = uint32_t(xw[1]), x2 = uint32_t(xw[2]), x3 = uint32_t(xw[3]);
          xw[0] = int(__byte_perm(x0, x1, 0x5140)), xw[1] = int(__byte_perm(x0, x1, 0x7362));
          xw[2] = int(__byte_perm(x2, x3, 0x5140)), xw[3] = int(__byte_perm(x2, x3, 0x7362));
#pragma unroll
          for (int i = 0; i < 4; ++i) x_sum = dot4_i8(xw[i], 0x01010101, x_sum);
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
          int d = 0;
#pragma unroll
          for (int i = 0; i < 4; ++i) d = dot4_i8(q[c][i], xw[i], d);
          if constexpr (kInt4) d -= zero[c] * x_sum;
          acc[c][t] = fmaf(float(d), scale[c] * sx, acc[c][t]);
        }
      }
    }
  }
  finish_gemv<Lanes, TR, C, Norm>(acc, squares, partial, parts, b, T, K);
}

// Output columns per block: on CUDA 8 for one or two rows (16 codes a column in flight per thread,
// 8 x 16 bytes of int8 weights), 4 from 3 rows (the rows' accumulators need the registers); gfx906 keeps
// 4, where 8 takes 126-169 VGPRs (one wave per SIMD; scripts/audit_gfx906.sh lists them).
#if defined(DCUSERVE_CUDA)
template <int TR> constexpr int kColumns = TR <= 2 ? 8 : 4;
#else
template <int TR> constexpr int kColumns = 4;
#endif
// Up to this many rows each block quantizes its activations in registers (no kernel before it). From
// 2 rows that work, repeated by every block, costs more than the quantize kernel (H100, 27B batch 2:
// int8 136.2 -> 147.2 tok/s, int4 142.3 -> 179.2 with the kernel); int4, whose GEMV spends twice
// int8's instructions per byte, takes the kernel at one row too (H100 batch 1, with it: 27B int4
// 115.2 -> 123.3, 9B int4 354 -> 374; int8 stays in the block: 9B 277 -> 263, 27B 88.9 -> 90.4 with
// the kernel; docs/PERFORMANCE.md).
template <typename W> constexpr int kQuantizeInBlockRows = std::is_same_v<W, Int8Code> ? 1 : 0;

template <int Lanes, typename W>
void launch_gemv(const Launch& l, const MatmulArgs* group, int count, bool swiglu, const GemvFusion& fusion,
                 const GemvActivations& in) {
  const MatmulArgs& a = group[0];
  auto go = [&](auto tr) {
    constexpr int TR = decltype(tr)::value, C = kColumns<TR>;
    GemvParts<W> parts;
    const unsigned grid = gemv_parts(group, count, swiglu, fusion, C, parts);
    auto launch = [&](auto kernel) { launch_overlapping(l, kernel, grid, kGemvThreads, 0, in, parts, int(a.T), a.K); };
    if constexpr (TR <= kQuantizeInBlockRows<W>) {
      if (fusion.norm_w) return launch(gemv_int8_kernel<Lanes, TR, C, W, true, true>);
      return launch(gemv_int8_kernel<Lanes, TR, C, W, true, false>);
    } else {
      launch(gemv_int8_kernel<Lanes, TR, C, W, false, false>);
    }
  };
  if (a.T == 1) go(std::integral_constant<int, 1>{});
  else if (a.T <= 2) go(std::integral_constant<int, 2>{});
  else if (a.T <= 4) go(std::integral_constant<int, 4>{});
  else if (a.T <= 8) go(std::integral_constant<int, 8>{});
  else go(std::integral_constant<int, kGemvMaxTokens>{});
}

// quantize_activations_kernel over x [T, K]; fusion's norm (if any) applied first.
template <typename Out>
void quantize(const Launch& l, const float* x, int64_t T, int64_t K, const GemvFusion& fusion, Out* out,
              Out* lo, float* scales) {
  const dim3 grid(blocks_for(K, kQuantizeThreads), unsigned(T));
  launch_overlapping(l, quantize_activations_kernel<Out>, grid, kQuantizeThreads, 0, x, K, fusion.norm_w,
                     fusion.norm_type, fusion.eps, out, lo, scales);
  GPU_CHECK_LAUNCH();
}

}  // namespace

void launch_int8_activation_gemv(const Launch& l, const MatmulArgs* group, int count, bool swiglu,
                                 const GemvFusion& fusion) {
  const MatmulArgs& a = group[0];
  if (a.T > kGemvMaxTokens || a.K % kBlock != 0 || !integer_codes(a.format))
    fail_call("launch_int8_activation_gemv", __FILE__, __LINE__, "needs int8 or int4 weights, K % 32 == 0, T <= 16");
  GemvActivations in;
  GemvFusion rest = fusion;
  const int in_block_rows =
      a.format == WeightFormat::Int8 ? kQuantizeInBlockRows<Int8Code> : kQuantizeInBlockRows<Int4Pair>;
  if (a.T <= in_block_rows) {
    if (!aligned16(a.x) || (fusion.norm_w && !aligned16(fusion.norm_w)))
      fail_call("launch_int8_activation_gemv", __FILE__, __LINE__, "x and the norm weight need 16-byte alignment");
    in.x = a.x;
  } else {
    if (!l.activations) fail_call("launch_int8_activation_gemv", __FILE__, __LINE__, "no scratch for activation codes");
    // codes [T, K] int8, then scales [T, K / 32] f32 (4-byte aligned: K is a multiple of 32)
    int8_t* codes = static_cast<int8_t*>(l.activations->get(size_t(a.T * a.K) + size_t(a.T * a.K / kBlock) * sizeof(float)));
    float* scales = reinterpret_cast<float*>(codes + a.T * a.K);
    quantize<int8_t>(l, a.x, a.T, a.K, fusion, codes, nullptr, scales);
    in.codes = codes, in.scales = scales;
    rest.norm_w = nullptr;  // applied by the quantize kernel
  }
  with_lanes(l.lanes, [&](auto lanes) {
    constexpr int Lanes = decltype(lanes)::value;
    if (a.format == WeightFormat::Int8) launch_gemv<Lanes, Int8Code>(l, group, count, swiglu, rest, in);
    else launch_gemv<Lanes, Int4Pair>(l, group, count, swiglu, rest, in);
  });
  GPU_CHECK_LAUNCH();
}

const float* launch_round_activations(const Launch& l, const float* x, int64_t T, int64_t K) {
  if (K % kBlock != 0) fail_call("launch_round_activations", __FILE__, __LINE__, "K must be a multiple of 32");
  if (!l.activations) fail_call("launch_round_activations", __FILE__, __LINE__, "no scratch for activations");
  float* rounded = static_cast<float*>(l.activations->get(size_t(T * K) * sizeof(float)));
  quantize<float>(l, x, T, K, {}, rounded, nullptr, nullptr);
  return rounded;
}

void launch_round_split16(const Launch& l, const float* x, int64_t T, int64_t K, void* hi, void* lo, DType type) {
  if (K % kBlock != 0) fail_call("launch_round_split16", __FILE__, __LINE__, "K must be a multiple of 32");
  if (type == DType::BF16) quantize<Bf16>(l, x, T, K, {}, static_cast<Bf16*>(hi), static_cast<Bf16*>(lo), nullptr);
  else quantize<F16>(l, x, T, K, {}, static_cast<F16*>(hi), static_cast<F16*>(lo), nullptr);
}

}  // namespace dcu::gpu
