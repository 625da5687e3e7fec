#pragma once
// Device helpers shared by the attention kernels (attention.cu, decode_attention.cu).

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

// C consecutive cache elements as f32, in one vector load (C * sizeof(E) bytes, aligned by the caller).
template <int C, typename E>
__device__ __forceinline__ void load_elements(const E* p, float (&out)[C]) {
  if constexpr (sizeof(E) == 2 && C >= 2) {
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

// Paged attention for steps of few rows per sequence (decode, speculative verify): split over the
// context (flash-decoding), then merged. Writes a.out.
void launch_decode_attention(const Launch& l, const PagedAttentionArgs& a, Scratch& scratch);

}  // namespace dcu::gpu
