#pragma once
// Device helpers shared by the attention kernels (attention.cu, decode_attention.cu and their tensor-core
// variants).

#include <type_traits>

#include "backend/gpu/kernels.h"

namespace dcu::gpu {

// Sequence of packed row t (seq_row_begin is sorted, S small).
__device__ __forceinline__ int sequence_of(const int32_t* seq_row_begin, int S, int t) {
  int lo = 0, hi = S - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (seq_row_begin[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// A decode block's share of its sequence's positions [0, n): `splits` equal runs of whole 16-position
// tiles. Every sequence spreads over all splits of the grid, whatever its length; the split count is
// the host's (from the power-of-two bucket of the step's positions), so the replay of a step graph
// splits exactly like the eager step.
__device__ __forceinline__ int split_length(int n, int splits) { return ((n + splits - 1) / splits + 15) / 16 * 16; }

// An 8-bit KV cache's code (PagedKv: element = code * the row's scale).
__device__ __forceinline__ float to_f32(Int8Code x) { return float(x.bits); }

// Runs f(E{}) with E the device element type of a KV cache: float, F16, Bf16 or Int8Code.
template <typename F>
void with_cache_type(DType t, F&& f) {
  if (t == DType::I8) return f(Int8Code{});
  with_elem_type(t, f);
}

// C consecutive cache elements as f32 (codes, for an 8-bit cache), in one vector load (C * sizeof(E)
// bytes, aligned by the caller).
template <int C, typename E>
__device__ __forceinline__ void load_elements(const E* p, float (&out)[C]) {
  if constexpr (sizeof(E) == 1 && C >= 2) {
    using Word = std::conditional_t<C == 8, uint2, std::conditional_t<C == 4, uint32_t, uint16_t>>;
    const Word w = *reinterpret_cast<const Word*>(p);
    const int8_t* code = reinterpret_cast<const int8_t*>(&w);
#pragma unroll
    for (int j = 0; j < C; ++j) out[j] = float(code[j]);
  } else if constexpr (sizeof(E) == 2 && C >= 2) {
    using Word = std::conditional_t<C == 8, uint4, std::conditional_t<C == 4, uint2, uint32_t>>;
    const Word w = *reinterpret_cast<const Word*>(p);
    const uint16_t* half = reinterpret_cast<const uint16_t*>(&w);
#pragma unroll
    for (int j = 0; j < C; ++j) out[j] = to_f32(E{half[j]});
  } else {
#pragma unroll
    for (int j = 0; j < C; ++j) out[j] = to_f32(p[j]);
  }
}

// decode_attention_tensor_core.cu (CUDA): the rows of a sequence one block of the tensor-core decode
// kernel serves, 0 where it does not apply (wave64 emulation, f32 caches, other head dims, GQA groups
// above 8, block sizes not a multiple of 16); the launch, splits as launch_decode_attention's.
int tensor_core_decode_rows(const Launch& l, const PagedAttentionArgs& a);
void launch_tensor_core_decode(const Launch& l, const PagedAttentionArgs& a, float* part_o, float* part_ml, int splits,
                               int R);

// prefill_attention_tensor_core.cu (CUDA): whether the tensor-core prefill kernel serves a step that
// attention.cu's tiled prefill kernel would (native 32-lane warps, 16-bit and int8 caches, d 64, 128
// or 256, GQA groups up to 64); its launch. HIP builds: false.
bool tensor_core_prefill_fits(const Launch& l, const PagedAttentionArgs& a);
void launch_tensor_core_prefill(const Launch& l, const PagedAttentionArgs& a);

// Paged attention for steps of few rows per sequence (decode, speculative verify): split over the
// context (flash-decoding), then merged. Writes a.out.
void launch_decode_attention(const Launch& l, const PagedAttentionArgs& a, Scratch& scratch);

}  // namespace dcu::gpu
