#pragma once
// Warp-level tensor-core multiplies (CUDA, sm_80+): mma.sync m16n8k16, 16-bit inputs, f32 accumulators,
// and the 16-bit pairs their fragments hold; the asynchronous copies that stage their tiles. Lane l, g = l / 4, t = l % 4, holds
//   A (16 x 16, row-major): a0 = (row g, k 2t, 2t + 1), a1 = (row g + 8, same k),
//                           a2 = (row g, k 2t + 8, 2t + 9), a3 = (row g + 8, same k);
//   B (16 x 8):             b0 = (k 2t, 2t + 1, column g), b1 = (k 2t + 8, 2t + 9, column g);
//   C (16 x 8, f32):        c0, c1 = (row g, columns 2t, 2t + 1), c2, c3 = (row g + 8, same columns);
// a pair keeps its lower index in the low half.

#if defined(DCUSERVE_CUDA)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "backend/gpu/kernels.h"

namespace dcu::gpu {

// d += A . B for one m16n8k16 tile. Not volatile: the compiler may interleave independent multiplies.
#define DCU_MMA_M16N8K16(type)                                                                      \
  asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
      "{%8,%9}, {%0,%1,%2,%3};"                                                                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                              \
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))

// W: Bf16 or F16, the type of both A and B.
template <typename W>
__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<W, Bf16>) DCU_MMA_M16N8K16("bf16");
  else DCU_MMA_M16N8K16("f16");
}
#undef DCU_MMA_M16N8K16

// (x0, x1) rounded to the 16-bit type W, x0 in the low half.
template <typename W>
__device__ __forceinline__ uint32_t pack_pair(float x0, float x1) {
  if constexpr (std::is_same_v<W, Bf16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// (x0, x1) = hi + lo to about twice W's precision: the rounded pair and what rounding left.
template <typename W>
__device__ __forceinline__ void split_pair(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  hi = pack_pair<W>(x0, x1);
  const float2 h = widen_pair(hi, W{});
  lo = pack_pair<W>(x0 - h.x, x1 - h.y);
}

// 8 int8 codes as the bf16 pairs (k, k + 1) .. (k + 6, k + 7), exactly (through f32's 2^23 + q + 128).
__device__ __forceinline__ uint4 int8_pairs(uint2 raw) {
  const uint32_t words[2] = {raw.x ^ 0x80808080u, raw.y ^ 0x80808080u};  // q + 128 per byte
  uint32_t pairs[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {  // f32 q is exact in bf16: its high half-word
    const uint32_t w = words[i / 2], shift = 16 * (i % 2);
    const float lo = magic_float((w >> shift) & 0xFFu) - 8388736.0f;
    const float hi = magic_float((w >> (shift + 8)) & 0xFFu) - 8388736.0f;
    pairs[i] = __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632);
  }
  return make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
}

// 8 int8 codes as the f16 pairs (k, k + 1) .. (k + 6, k + 7), exactly: the byte q + 128 under 0x64 is the
// f16 1024 + q + 128, and one subtraction per pair leaves q. Fewer instructions than int8_pairs (bf16
// has too few mantissa bits for that trick).
__device__ __forceinline__ uint4 int8_f16_pairs(uint2 raw) {
  const uint32_t lo = raw.x ^ 0x80808080u, hi = raw.y ^ 0x80808080u;  // q + 128 per byte
  const __half2 bias = __half2half2(__ushort_as_half(0x6480u));        // 1152
  auto pair = [&](uint32_t w, uint32_t selector) {
    const uint32_t biased = __byte_perm(w, 0x64646464u, selector);
    const __half2 q = __hsub2(*reinterpret_cast<const __half2*>(&biased), bias);
    return *reinterpret_cast<const uint32_t*>(&q);
  };
  return make_uint4(pair(lo, 0x4140), pair(lo, 0x4342), pair(hi, 0x4140), pair(hi, 0x4342));
}

// ---- asynchronous copies global -> shared memory (cp.async, sm_80+) ----
// Bytes (16 or 4) to the shared-space address `to`; valid false: zeros, `from` not read.
template <int Bytes>
__device__ __forceinline__ void copy_async(uint32_t to, const void* from, bool valid = true) {
  static_assert(Bytes == 16 || Bytes == 4);
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(to), "l"(from), "r"(valid ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(to), "l"(from), "r"(valid ? 4 : 0) : "memory");
}
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most N of this thread's committed groups are in flight (what landed is visible to
// this thread; to the warp or block after a barrier).
template <int N>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace dcu::gpu
#endif
