// Logit processing for sampling on the device: penalties and bans, the per-row top-k (radix select
// over order-preserving integer keys, then a bitonic sort on chip) with the softmax statistics, in two
// phases (each segment of a row, then the segments merged), and the column copy for tensor-parallel
// logits. Shared memory and barriers only, no warp shuffles: no
// logic here depends on the lane count.

#include <algorithm>
#include <climits>

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kThreads = 512;  // a power of two (tree reductions)
constexpr int kRadixBits = 8;
constexpr int kRadixBins = 1 << kRadixBits;
// A row is summarised in segments of at least this many values, one block each, then merged.
constexpr int64_t kSegmentValues = 8192;
constexpr int64_t kMaxSegments = 32;

// grid (E / kThreads).   logits [R, V]; targets, factors [E, 2]
__global__ void adjust_logits_kernel(float* logits, int64_t V, const int32_t* targets, const float* factors,
                                     int64_t E) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= E) return;
  float* x = logits + int64_t(targets[2 * e]) * V + targets[2 * e + 1];
  const float v = *x;
  *x = (v > 0.0f ? v / factors[2 * e] : v * factors[2 * e]) - factors[2 * e + 1];
}

// grid (m, ceil(V / kThreads)): one thread per logit, so that a warp writes consecutive floats.
// logits [R, V]; rows [m]; allowed [m, words]
__global__ void mask_logits_kernel(float* logits, int64_t V, const int32_t* rows, const uint32_t* allowed,
                                   int64_t words) {
  const int64_t id = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  if (id >= V) return;
  if (!((allowed[blockIdx.x * words + (id >> 5)] >> (id & 31)) & 1u)) logits[int64_t(rows[blockIdx.x]) * V + id] = -INFINITY;
}

// Unsigned key with the order of the floats: a larger float has a larger key; -0 and +0 are equal.
__device__ __forceinline__ uint32_t order_key(float x) {
  const uint32_t u = x == 0.0f ? 0u : __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Softmax statistics of a set of logits: the largest (lowest id on ties), sum exp(x - max) and
// sum exp((x - max) * inv_t).
struct RowStats {
  float max;
  int32_t arg;
  float sum;
  float mass;
};

__device__ __forceinline__ bool leads(const RowStats& a, const RowStats& b) {
  return a.max > b.max || (a.max == b.max && a.arg < b.arg);
}

__device__ __forceinline__ RowStats merge(RowStats a, RowStats b, float inv_t) {
  if (leads(b, a)) {
    const RowStats t = a;
    a = b;
    b = t;
  }
  if (b.max == -INFINITY) return a;  // b holds nothing (or only -inf)
  const float d = b.max - a.max;
  a.sum += b.sum * expf(d);
  a.mass += b.mass * expf(d * inv_t);
  return a;
}

// A thread's counts of a few digits in registers, direct-mapped, added to the shared histogram on
// eviction: logits crowd into a handful of top-byte digits (sign and exponent), and one shared atomic
// per element on those few bins serialises the whole block.
struct DigitCounts {
  static constexpr int kSlots = 8;
  uint32_t digit[kSlots], count[kSlots];
  __device__ DigitCounts() {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) digit[s] = 0, count[s] = 0;
  }
  __device__ __forceinline__ void add(uint32_t d, uint32_t* hist) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {  // static indices keep the arrays in registers
      if (s != int(d % kSlots)) continue;
      if (digit[s] != d) {
        if (count[s]) atomicAdd(&hist[digit[s]], count[s]);
        digit[s] = d, count[s] = 0;
      }
      ++count[s];
    }
  }
  __device__ __forceinline__ void flush(uint32_t* hist) {
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      if (count[s]) atomicAdd(&hist[digit[s]], count[s]);
  }
};

// Calls f(j, row[j]) for the elements j of one row this thread owns (j = threadIdx.x mod kThreads
// in units of float4 when the row allows 16-byte loads), in increasing j. One block reads a whole row,
// so the loads of several iterations are issued together: without that the pass is latency-bound
// (about 8 GB/s for one block on the H200).
template <typename F>
__device__ __forceinline__ void for_each_value(const float* __restrict__ row, int64_t V, F&& f) {
  constexpr int kInFlight = 4;  // float4 loads per thread before the first use
  if ((V & 3) == 0 && (reinterpret_cast<uintptr_t>(row) & 15) == 0) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t V4 = V / 4;
    int64_t j = threadIdx.x;
    for (; j + (kInFlight - 1) * kThreads < V4; j += kInFlight * kThreads) {
      float4 v[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) v[u] = row4[j + u * kThreads];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const int64_t at = 4 * (j + u * kThreads);
        f(at, v[u].x), f(at + 1, v[u].y), f(at + 2, v[u].z), f(at + 3, v[u].w);
      }
    }
    for (; j < V4; j += kThreads) {
      const float4 v = row4[j];
      f(4 * j, v.x), f(4 * j + 1, v.y), f(4 * j + 2, v.z), f(4 * j + 3, v.w);
    }
  } else {
    for (int64_t j = threadIdx.x; j < V; j += kThreads) f(j, row[j]);
  }
}

// Shared state of one row's summary.
struct SummaryShared {
  RowStats stats[kThreads];
  uint32_t hist[kRadixBins];
  uint32_t count_above[kThreads], count_equal[kThreads];  // inclusive scans over the thread segments
  uint32_t key[kMaxSummaryCandidates];
  int32_t id[kMaxSummaryCandidates];
  uint32_t digit, remaining;
};

// Inclusive prefix sums of a[0..kThreads) and b[0..kThreads) in place (Hillis-Steele).
__device__ void scan_pair(uint32_t* a, uint32_t* b) {
  for (int offset = 1; offset < kThreads; offset *= 2) {
    const int t = threadIdx.x;
    const uint32_t xa = t >= offset ? a[t - offset] : 0, xb = t >= offset ? b[t - offset] : 0;
    __syncthreads();
    a[t] += xa;
    b[t] += xb;
    __syncthreads();
  }
}

__device__ __forceinline__ bool before(uint32_t ka, int32_t ia, uint32_t kb, int32_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

__device__ __forceinline__ float from_order_key(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// The k largest of values[0..count) (k <= count, k <= kMaxSummaryCandidates), largest first and equal
// values by lower id, into out_values / out_ids [k]. Element j's id is ids[j], or id_base + j when ids
// is null; ids must grow with j among equal values (true of both callers). Every thread calls it.
__device__ void select_top_k(const float* __restrict__ values, const int32_t* __restrict__ ids, int64_t id_base,
                             int64_t count, int k, SummaryShared& sh, float* out_values, int32_t* out_ids) {
  const int t = threadIdx.x;
  auto id_of = [&](int64_t j) { return ids ? ids[j] : int32_t(id_base + j); };

  // The k-th largest key, 8 bits at a time from the top: each pass counts the digits of the keys that
  // share the prefix chosen so far.
  uint32_t prefix = 0, mask = 0, remaining = uint32_t(k);
  for (int shift = 32 - kRadixBits; shift >= 0; shift -= kRadixBits) {
    for (int b = t; b < kRadixBins; b += kThreads) sh.hist[b] = 0;
    __syncthreads();
    DigitCounts counts;
    for_each_value(values, count, [&](int64_t, float x) {
      const uint32_t key = order_key(x);
      if ((key & mask) == prefix) counts.add((key >> shift) & (kRadixBins - 1), sh.hist);
    });
    counts.flush(sh.hist);
    __syncthreads();
    if (t == 0) {
      uint32_t above = 0;
      int b = kRadixBins - 1;
      for (; b > 0 && above + sh.hist[b] < remaining; --b) above += sh.hist[b];
      sh.digit = uint32_t(b);
      sh.remaining = remaining - above;
    }
    __syncthreads();
    prefix |= sh.digit << shift;
    mask |= uint32_t(kRadixBins - 1) << shift;
    remaining = sh.remaining;
  }
  const uint32_t kth = prefix;
  const uint32_t ties = remaining, above = uint32_t(k) - remaining;  // keys equal to kth to take; keys above it

  // Gather them: each thread scans its own contiguous part, so the equal keys taken are the first ones
  // (the lowest ids).
  const int64_t part = (count + kThreads - 1) / kThreads, begin = t * part < count ? t * part : count,
                end = begin + part < count ? begin + part : count;
  uint32_t n_above = 0, n_equal = 0;
#pragma unroll 8
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t key = order_key(values[j]);
    n_above += key > kth;
    n_equal += key == kth;
  }
  sh.count_above[t] = n_above;
  sh.count_equal[t] = n_equal;
  __syncthreads();
  scan_pair(sh.count_above, sh.count_equal);
  uint32_t at_above = sh.count_above[t] - n_above, at_equal = sh.count_equal[t] - n_equal;
#pragma unroll 8
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t key = order_key(values[j]);
    if (key > kth) {
      sh.key[at_above] = key, sh.id[at_above] = id_of(j), ++at_above;
    } else if (key == kth && at_equal < ties) {
      sh.key[above + at_equal] = key, sh.id[above + at_equal] = id_of(j), ++at_equal;
    }
  }
  int size = 1;
  while (size < k) size *= 2;
  for (int j = k + t; j < size; j += kThreads) sh.key[j] = 0, sh.id[j] = INT_MAX;  // sorts last
  __syncthreads();

  // Bitonic sort, largest first, equal keys by lower id.
  for (int block = 2; block <= size; block *= 2) {
    for (int stride = block / 2; stride > 0; stride /= 2) {
      for (int a = t; a < size; a += kThreads) {
        const int b = a ^ stride;
        if (b <= a) continue;
        const bool in_order = (a & block) == 0;
        const bool swap = in_order ? before(sh.key[b], sh.id[b], sh.key[a], sh.id[a])
                                   : before(sh.key[a], sh.id[a], sh.key[b], sh.id[b]);
        if (swap) {
          const uint32_t key = sh.key[a];
          const int32_t id = sh.id[a];
          sh.key[a] = sh.key[b], sh.id[a] = sh.id[b];
          sh.key[b] = key, sh.id[b] = id;
        }
      }
      __syncthreads();
    }
  }
  for (int j = t; j < k; j += kThreads) out_values[j] = from_order_key(sh.key[j]), out_ids[j] = sh.id[j];
}

// Phase 1, grid (n, P): segment p of row rows[i] (`length` values from p * length, the last one
// shorter, but never below k: see launch_logit_summary). Its softmax statistics go to
// part_stats[i, p]; when k > 1 its k largest to part_values / part_ids [i, p, k].
__global__ void __launch_bounds__(kThreads)
    segment_summary_kernel(const float* __restrict__ logits, int64_t V, int64_t length, const int32_t* rows,
                           const float* inv_temperature, int k, RowStats* part_stats, float* part_values,
                           int32_t* part_ids) {
  __shared__ SummaryShared sh;
  const int t = threadIdx.x;
  const int64_t i = blockIdx.x, p = blockIdx.y, P = gridDim.y;
  const int64_t begin = p * length, count = (begin + length < V ? begin + length : V) - begin;
  const float* segment = logits + int64_t(rows[i]) * V + begin;
  const float inv_t = inv_temperature[i];

  // max, argmax and both exponential sums in one pass (running rescale).
  RowStats s{-INFINITY, INT_MAX, 0.0f, 0.0f};
  for_each_value(segment, count, [&](int64_t j, float x) {
    if (x > s.max) {
      if (s.max != -INFINITY) {
        const float d = s.max - x;
        s.sum *= expf(d);
        s.mass *= expf(d * inv_t);
      }
      s.max = x;
      s.arg = int32_t(begin + j);
    }
    if (s.max != -INFINITY) {
      s.sum += expf(x - s.max);
      s.mass += expf((x - s.max) * inv_t);
    }
  });
  sh.stats[t] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) sh.stats[t] = merge(sh.stats[t], sh.stats[t + half], inv_t);
    __syncthreads();
  }
  if (t == 0) part_stats[i * P + p] = sh.stats[0];
  if (k == 1) return;
  float* values = part_values + (i * P + p) * k;
  int32_t* ids = part_ids + (i * P + p) * k;
  select_top_k(segment, nullptr, begin, count, k, sh, values, ids);
}

// Phase 2, grid (n): the segments' statistics merged, and the k largest of their P * k candidates.
__global__ void __launch_bounds__(kThreads)
    merge_summary_kernel(const RowStats* part_stats, const float* part_values, const int32_t* part_ids, int P,
                         const float* inv_temperature, int k, float* top_values, int32_t* top_ids, float* stats) {
  __shared__ SummaryShared sh;
  const int t = threadIdx.x;
  const int64_t i = blockIdx.x;
  const float inv_t = inv_temperature[i];
  RowStats s{-INFINITY, INT_MAX, 0.0f, 0.0f};
  for (int p = t; p < P; p += kThreads) s = merge(s, part_stats[i * P + p], inv_t);
  sh.stats[t] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) sh.stats[t] = merge(sh.stats[t], sh.stats[t + half], inv_t);
    __syncthreads();
  }
  const RowStats total = sh.stats[0];
  if (t == 0) {
    stats[2 * i] = total.max + logf(total.sum);
    stats[2 * i + 1] = total.mass;
  }
  if (k == 1) {
    if (t == 0) top_values[i] = total.max, top_ids[i] = total.arg == INT_MAX ? 0 : total.arg;
    return;
  }
  // Candidates lie segment after segment, each segment's sorted: equal values appear by growing id.
  select_top_k(part_values + i * P * k, part_ids + i * P * k, 0, int64_t(P) * k, k, sh, top_values + i * k,
               top_ids + i * k);
}

// grid (R).   x [R, w], out [R, W]
__global__ void copy_columns_kernel(const float* x, int64_t w, float* out, int64_t W, int64_t column) {
  const int64_t r = blockIdx.x;
  for (int64_t j = threadIdx.x; j < w; j += blockDim.x) out[r * W + column + j] = x[r * w + j];
}

}  // namespace

void launch_adjust_logits(const Launch& l, float* logits, int64_t V, const int32_t* targets, const float* factors,
                          int64_t E) {
  if (E == 0) return;
  launch_kernel(l, adjust_logits_kernel, unsigned((E + kThreads - 1) / kThreads), kThreads, 0, logits, V, targets,
                factors, E);
  GPU_CHECK_LAUNCH();
}

void launch_mask_logits(const Launch& l, float* logits, int64_t V, const int32_t* rows, const uint32_t* allowed,
                        int64_t m) {
  if (m == 0) return;
  const dim3 grid(unsigned(m), unsigned((V + kThreads - 1) / kThreads));
  launch_kernel(l, mask_logits_kernel, grid, kThreads, 0, logits, V, rows, allowed, (V + 31) / 32);
  GPU_CHECK_LAUNCH();
}

void launch_logit_summary(const Launch& l, const float* logits, int64_t V, const int32_t* rows,
                          const float* inv_temperature, int64_t n, int k, float* top_values, int32_t* top_ids,
                          float* stats, Scratch& scratch) {
  if (n == 0) return;
  // Segments of at least kSegmentValues (a multiple of 4: 16-byte loads stay aligned), at most 32.
  // The last one is the shortest: at least V / P - 4 (P - 1) >= 8192 - 124 values when P > 1, the
  // whole row (>= k) when P = 1, so every segment holds its k candidates.
  const int64_t P = std::max<int64_t>(1, std::min<int64_t>(kMaxSegments, V / kSegmentValues));
  const int64_t length = ((V + P - 1) / P + 3) / 4 * 4;
  static_assert(kSegmentValues - 4 * (kMaxSegments - 1) >= kMaxSummaryCandidates);
  const int64_t k_part = k == 1 ? 0 : k;
  char* base = static_cast<char*>(scratch.get(size_t(n * P) * (sizeof(RowStats) + size_t(k_part) * 8)));
  auto* part_stats = reinterpret_cast<RowStats*>(base);
  auto* part_values = reinterpret_cast<float*>(base + n * P * sizeof(RowStats));
  auto* part_ids = reinterpret_cast<int32_t*>(part_values + n * P * k_part);
  launch_kernel(l, segment_summary_kernel, dim3(unsigned(n), unsigned(P)), kThreads, 0, logits, V, length, rows,
                inv_temperature, k, part_stats, part_values, part_ids);
  GPU_CHECK_LAUNCH();
  launch_kernel(l, merge_summary_kernel, unsigned(n), kThreads, 0, part_stats, part_values, part_ids, int(P),
                inv_temperature, k, top_values, top_ids, stats);
  GPU_CHECK_LAUNCH();
}

void launch_copy_columns(const Launch& l, const float* x, int64_t R, int64_t w, float* out, int64_t W,
                         int64_t column) {
  if (R == 0 || w == 0) return;
  launch_kernel(l, copy_columns_kernel, unsigned(R), 256, 0, x, w, out, W, column);
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
