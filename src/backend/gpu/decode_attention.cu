// Decode attention (flash-decoding) for steps with few rows per sequence: decode steps (one row each)
// and speculative verify steps (1 + k rows). grid (nkv, T, splits), block kDecodeThreads = W logical
// warps of Lanes.
//
// A block serves one KV head, one context split and R consecutive rows of one sequence (the rows of a
// verify step; blocks of the other rows of the group exit at once), so each K/V row of the split is
// fetched from memory once for all R rows and all G query heads of the group. Warp w works for row
// w % R and walks the split in chunks of kChunk positions, interleaved with the other WP = W / R warps
// of its row; the warps of different rows walk the same chunks side by side and share them in L1.
//
// Per chunk a lane loads dims [lane C, lane C + C) of kChunk K rows and kChunk V rows (16-byte loads
// of a 16-bit cache at C = 8), forms its partial dot products for the NV = GT kChunk (head, position)
// pairs, and one reduce-scatter butterfly leaves lane l with the whole score of pair bitrev(l mod NV):
// NV - 1 shuffles a chunk, not NV log2(Lanes). The online softmax runs in that layout (one exp per lane
// and pair); the chunk's probabilities and rescale factors reach every lane through the warp's shared
// scratch for the V accumulation, acc [GT][C] per lane. At the end the warps of a row merge in shared
// memory; with one split the block writes the output, else the unnormalized partial and its (max,
// sum), which merge_splits_kernel combines.

#include <algorithm>
#include <cmath>

#include "backend/gpu/attention_common.h"

namespace dcu::gpu {
namespace {

constexpr int kDecodeThreads = 256;
constexpr int kChunk = 4;          // positions a warp scores at once
constexpr int kMinSplitLen = 128;  // shorter splits cost more to merge than they gain
constexpr int kMaxGroup = 8;       // query heads per KV head (Qwen3.5: 4 to 6)
constexpr size_t kMaxQueryBytes = 32 * 1024;  // shared memory for the block's query rows

// Where dim lane * C + j of head g of a query (or output) row sits in shared memory: consecutive lanes
// read consecutive 16 bytes (C >= 4) or 4 bytes (C < 4), free of bank conflicts.
template <int Lanes, int C>
__device__ __forceinline__ int dim_slot(int g, int lane, int j) {
  if constexpr (C >= 4) return g * Lanes * C + (j / 4) * Lanes * 4 + lane * 4 + j % 4;
  else return g * Lanes * C + j * Lanes + lane;
}

// Lane l ends with the warp's sum of part[bitrev(l mod NV)], the log2(NV) low bits of l reversed: at
// step O the lanes with bit O set keep the upper half of the pairs left and send the lower half.
template <int Lanes, int NV, int O = 1>
__device__ __forceinline__ float reduce_scatter(float (&part)[NV], int lane) {
  if constexpr (O < NV) {
    constexpr int half = NV / (2 * O);
    // A select by bit masks: written as `upper ? part[i] : part[i + half]`, compilers turn it into a
    // dynamic index into part, which moves the array to scratch memory.
    const uint32_t upper = lane & O ? ~0u : 0u;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const uint32_t lo = __float_as_uint(part[i]), hi = __float_as_uint(part[i + half]);
      const float send = __uint_as_float((lo & upper) | (hi & ~upper));
      const float keep = __uint_as_float((hi & upper) | (lo & ~upper));
      part[i] = keep + lane_xor<Lanes>(send, O);
    }
    return reduce_scatter<Lanes, NV, 2 * O>(part, lane);
  } else {
    float s = part[0];
#pragma unroll
    for (int o = NV; o < Lanes; o *= 2) s += lane_xor<Lanes>(s, o);
    return s;
  }
}

template <int NV>
__device__ __forceinline__ int pair_of_lane(int lane) {
  int i = 0;
#pragma unroll
  for (int o = 1; o < NV; o *= 2)
    if (lane & o) i += NV / (2 * o);
  return i;
}

// Lanes * C >= d covers a head; when equal, rows are read with vector loads and no bounds checks.
template <int Lanes, typename E, int C, int GT>
__global__ void __launch_bounds__(kDecodeThreads) decode_attention_kernel(PagedAttentionArgs a, float* part_o,
                                                                          float* part_ml, int splits, int R) {
  constexpr int NV = GT * kChunk;
  static_assert(NV <= Lanes, "a warp holds one score per lane");
  start_after_previous_kernel();
  const int kvh = blockIdx.x, t0 = blockIdx.y, split = blockIdx.z;
  const int s = sequence_of(a.seq_row_begin, a.num_seqs, t0);
  const int first = a.seq_row_begin[s], rows = min(R, a.seq_row_begin[s + 1] - t0);
  if ((t0 - first) % R != 0) return;  // a row of the group another block serves
  const int G = a.nh / a.nkv, d = a.d, W = blockDim.x / Lanes, WP = W / R;
  constexpr int DP = Lanes * C;
  // Shared: q (later o) [R][GT][DP] | probabilities and rescale factors [W][NV + GT] | m, l [W][GT]
  DYNAMIC_SHARED(float4, smem4);
  float* qs = reinterpret_cast<float*>(smem4);
  float* pbuf = qs + R * GT * DP;
  float* ms = pbuf + W * (NV + GT);
  float* ls = ms + W * GT;
  const int warp = threadIdx.x / Lanes, lane = threadIdx.x % Lanes;
  const int r = warp % R, pg = warp / R;
  const bool active = r < rows && pg < WP;
  for (int i = threadIdx.x; i < R * GT * DP; i += blockDim.x) {
    const int rr = i / (GT * DP), g = i / DP % GT, slot = i % DP;
    // invert dim_slot: slot -> (lane, j)
    const int ln = C >= 4 ? slot / 4 % Lanes : slot % Lanes;
    const int j = C >= 4 ? slot / (Lanes * 4) * 4 + slot % 4 : slot / Lanes;
    const int e = ln * C + j;
    qs[i] = rr < rows && g < G && e < d ? a.q[(int64_t(t0 + rr) * a.nh + kvh * G + g) * d + e] * a.scale : 0.0f;
  }
  __syncthreads();

  const int32_t* blocks = a.block_tables + int64_t(s) * a.max_blocks;
  const int64_t kv_row = int64_t(a.nkv) * d;
  const E* kc = static_cast<const E*>(a.k_cache) + int64_t(kvh) * d;
  const E* vc = static_cast<const E*>(a.v_cache) + int64_t(kvh) * d;
  const int split_len = split_length(a.positions[t0 + rows - 1] + 1, splits), begin = split * split_len;
  const int end = active ? min(a.positions[t0 + r] + 1, begin + split_len) : begin;
  const int pair = pair_of_lane<NV>(lane), own_g = pair / kChunk, own_u = pair % kChunk;
  const float* q = qs + r * GT * DP;
  float* pw = pbuf + warp * (NV + GT);
  float m = -INFINITY, l = 0.0f;  // the running max and sum of head own_g
  float acc[GT][C] = {};
  const bool exact = d == Lanes * C;
  // An 8-bit cache's codes times the row's scale (`scale` unused otherwise).
  auto load_row = [&](const E* row, float scale, float (&x)[C]) {
    if (exact) {
      load_elements<C>(row + lane * C, x);
    } else {
#pragma unroll
      for (int j = 0; j < C; ++j) x[j] = lane * C + j < d ? to_f32(row[lane * C + j]) : 0.0f;
    }
    if constexpr (std::is_same_v<E, Int8Code>) {
#pragma unroll
      for (int j = 0; j < C; ++j) x[j] *= scale;
    }
  };
  for (int c0 = begin + pg * kChunk; c0 < end; c0 += WP * kChunk) {
    float k[kChunk][C], v[kChunk][C];
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      const int p = c0 + u < end ? c0 + u : c0;  // past the end: a valid row, masked below
      const int64_t slot = int64_t(blocks[p / a.block_size]) * a.block_size + p % a.block_size;
      const bool int8 = std::is_same_v<E, Int8Code>;
      load_row(kc + slot * kv_row, int8 ? a.k_scale[slot * a.nkv + kvh] : 0.0f, k[u]);
      load_row(vc + slot * kv_row, int8 ? a.v_scale[slot * a.nkv + kvh] : 0.0f, v[u]);
    }
    float part[NV];
#pragma unroll
    for (int g = 0; g < GT; ++g) {
#pragma unroll
      for (int u = 0; u < kChunk; ++u) part[g * kChunk + u] = 0.0f;
#pragma unroll
      for (int j = 0; j < C; ++j) {
        const float qj = q[dim_slot<Lanes, C>(g, lane, j)];
#pragma unroll
        for (int u = 0; u < kChunk; ++u) part[g * kChunk + u] += qj * k[u][j];
      }
    }
    float score = reduce_scatter<Lanes, NV>(part, lane);
    if (c0 + own_u >= end) score = -INFINITY;
    // the chunk's max of head own_g: its kChunk pairs sit on the lanes that differ in bits GT .. NV / 2
    float cmax = score;
#pragma unroll
    for (int o = GT; o < NV; o *= 2) cmax = fmaxf(cmax, lane_xor<Lanes>(cmax, o));
    const float m_new = fmaxf(m, cmax);  // finite: position c0 is always valid
    const float corr = expf(m - m_new), prob = expf(score - m_new);
    float psum = prob;
#pragma unroll
    for (int o = GT; o < NV; o *= 2) psum += lane_xor<Lanes>(psum, o);
    l = l * corr + psum, m = m_new;
    warp_sync<Lanes>();  // the previous chunk's readers of pw are done
    if (lane < NV) pw[pair] = prob;
    if (lane < NV && own_u == 0) pw[NV + own_g] = corr;
    warp_sync<Lanes>();
#pragma unroll
    for (int g = 0; g < GT; ++g) {
      const float cg = pw[NV + g];
      float pu[kChunk];
#pragma unroll
      for (int u = 0; u < kChunk; ++u) pu[u] = pw[g * kChunk + u];
#pragma unroll
      for (int j = 0; j < C; ++j) {
        float x = acc[g][j] * cg;
#pragma unroll
        for (int u = 0; u < kChunk; ++u) x += pu[u] * v[u][j];
        acc[g][j] = x;
      }
    }
  }
  if (lane < NV && own_u == 0) ms[warp * GT + own_g] = m, ls[warp * GT + own_g] = l;
  __syncthreads();  // every warp is done with q: its space takes the merged outputs
  // The warps of a row add into o one after another: a fixed order keeps the result deterministic
  // (graph replays and eager steps agree bit for bit; atomics would not).
  float* o = qs + r * GT * DP;
  for (int k = 0; k < WP; ++k) {
    if (active && pg == k) {
#pragma unroll
      for (int g = 0; g < GT; ++g) {
        float mr = -INFINITY;
        for (int w = r; w < R * WP; w += R) mr = fmaxf(mr, ms[w * GT + g]);
        const float weight = ls[warp * GT + g] > 0.0f ? expf(ms[warp * GT + g] - mr) : 0.0f;
#pragma unroll
        for (int j = 0; j < C; ++j) {
          const int slot = dim_slot<Lanes, C>(g, lane, j);
          o[slot] = (k == 0 ? 0.0f : o[slot]) + acc[g][j] * weight;
        }
      }
    }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < rows * G * d; i += blockDim.x) {
    const int rr = i / (G * d), g = i / d % G, e = i % d;
    float mr = -INFINITY, lr = 0.0f;
    for (int w = rr; w < R * WP; w += R) mr = fmaxf(mr, ms[w * GT + g]);
    for (int w = rr; w < R * WP; w += R)
      if (ls[w * GT + g] > 0.0f) lr += ls[w * GT + g] * expf(ms[w * GT + g] - mr);
    const float oe = qs[rr * GT * DP + dim_slot<Lanes, C>(g, e / C, e % C)];
    const int64_t h = int64_t(t0 + rr) * a.nh + kvh * G + g;
    if (splits == 1) {
      a.out[h * d + e] = oe / lr;
    } else {
      part_o[(h * splits + split) * d + e] = oe;
      if (e == 0) part_ml[(h * splits + split) * 2] = mr, part_ml[(h * splits + split) * 2 + 1] = lr;
    }
  }
}

// grid (T * nh), block threads over d, shared memory [splits]: merges the splits with log-sum-exp
// weights, computed once per split; the d outputs then sum their splits with independent loads.
__global__ void merge_splits_kernel(const float* part_o, const float* part_ml, float* out, int splits, int d) {
  start_after_previous_kernel();
  DYNAMIC_SHARED(float, weights);
  __shared__ float total;
  const int64_t th = blockIdx.x;
  const float* ml = part_ml + th * splits * 2;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s)
    if (ml[2 * s + 1] > 0.0f) m = fmaxf(m, ml[2 * s]);
  for (int s = threadIdx.x; s < splits; s += blockDim.x) weights[s] = ml[2 * s + 1] > 0.0f ? expf(ml[2 * s] - m) : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.0f;
    for (int s = 0; s < splits; ++s) l += weights[s] * ml[2 * s + 1];
    total = l;
  }
  __syncthreads();
  const float inv = 1.0f / total;
  const float* po = part_o + th * splits * d;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    float acc = 0.0f;
#pragma unroll 8
    for (int s = 0; s < splits; ++s) acc += weights[s] * po[int64_t(s) * d + i];
    out[th * d + i] = acc * inv;
  }
}

// Dims of a head a lane holds: Lanes C >= d.
int heads_dim_slice(const Launch& l, const PagedAttentionArgs& a) {
  return a.d <= l.lanes ? 1 : a.d <= 2 * l.lanes ? 2 : a.d <= 4 * l.lanes ? 4 : 8;
}

// The GQA group padded to the kernel's GT: 4 or 8 query heads per KV head.
int group_tile(const PagedAttentionArgs& a) { return a.nh / a.nkv <= 4 ? 4 : 8; }

// Blocks of each kernel resident per multiprocessor, for split_count: the tensor-core kernel's 147 KB
// of shared memory at d = 256 leave room for one; the portable kernel's 256 threads for two or more.
constexpr int kTensorCoreResident = 1, kPortableResident = 2;

// Rows of a sequence per block of decode_attention_kernel: the step's, as far as warps and shared memory
// allow.
int portable_decode_rows(const Launch& l, const PagedAttentionArgs& a) {
  const int W = kDecodeThreads / l.lanes;
  const size_t row_floats = size_t(group_tile(a)) * l.lanes * heads_dim_slice(l, a);
  return std::clamp(std::min(a.max_seq_rows, W), 1, int(kMaxQueryBytes / (row_floats * sizeof(float))));
}

void launch_portable_decode(const Launch& l, const PagedAttentionArgs& a, float* part_o, float* part_ml, int splits,
                            int R) {
  const int W = kDecodeThreads / l.lanes, C = heads_dim_slice(l, a), GT = group_tile(a);
  const size_t row_floats = size_t(GT) * l.lanes * C;
  const size_t smem = (R * row_floats + size_t(W) * (GT * kChunk + GT) + 2 * size_t(W) * GT) * sizeof(float);
  with_lanes(l.lanes, [&](auto lanes) {
    with_cache_type(a.cache_type, [&](auto e) {
      auto go = [&](auto c, auto gt) {
        auto kernel =
            decode_attention_kernel<decltype(lanes)::value, decltype(e), decltype(c)::value, decltype(gt)::value>;
        if (smem > 48 * 1024)
          GPU_CHECK(gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        launch_overlapping(l, kernel, dim3(a.nkv, a.T, splits), kDecodeThreads, smem, a, part_o, part_ml, splits, R);
      };
      using std::integral_constant;
      auto with_c = [&](auto gt) {
        if (C == 8) go(integral_constant<int, 8>{}, gt);
        else if (C == 4) go(integral_constant<int, 4>{}, gt);
        else if (C == 2) go(integral_constant<int, 2>{}, gt);
        else go(integral_constant<int, 1>{}, gt);
      };
      if (GT == 4) with_c(integral_constant<int, 4>{});
      else with_c(integral_constant<int, 8>{});
    });
  });
  GPU_CHECK_LAUNCH();
}

// The grid's context splits for `groups` blocks per KV head and split, `resident` blocks of the kernel
// per multiprocessor. Each sequence spreads over all splits (split_length), so every block of the grid
// has about the same work: the count fills whole waves of the device, at least two, and keeps splits
// from falling below kMinSplitLen for a context of the step's power-of-two bucket (the limit a step
// graph is padded to: an eager step and the replay of its graph get the same count and the same bits).
int split_count(const Launch& l, const PagedAttentionArgs& a, int groups, int resident) {
  int bucket = kMinSplitLen;
  while (bucket < a.max_position + 1) bucket *= 2;
  const int slots = l.multiprocessors * resident, per_split = a.nkv * groups;
  const int most = bucket / kMinSplitLen, fewest = std::min(most, std::max(1, (2 * slots + per_split - 1) / per_split));
  int best = fewest;
  double best_use = 0.0;
  for (int s = fewest; s <= std::min(most, 2 * fewest); ++s) {
    const int64_t blocks = int64_t(s) * per_split, waves = (blocks + slots - 1) / slots;
    const double use = double(blocks) / double(waves * slots);
    if (use > best_use + 1e-9) best = s, best_use = use;
  }
  return best;
}

}  // namespace

void launch_decode_attention(const Launch& l, const PagedAttentionArgs& a, Scratch& scratch) {
  if (a.nh / a.nkv > kMaxGroup)
    fail_call("launch_decode_attention", __FILE__, __LINE__, "more than 8 query heads per KV head (GQA group)");
  if (a.d > 8 * l.lanes) fail_call("launch_decode_attention", __FILE__, __LINE__, "head dim above 8 x the warp");
  const int tensor_core_rows = tensor_core_decode_rows(l, a);
  const int R = tensor_core_rows > 0 ? tensor_core_rows : portable_decode_rows(l, a);
  const int splits = split_count(l, a, a.num_seqs * ((a.max_seq_rows + R - 1) / R),
                               tensor_core_rows > 0 ? kTensorCoreResident : kPortableResident);
  float* part_o = nullptr;
  float* part_ml = nullptr;
  if (splits > 1) {
    const size_t rows = size_t(a.T) * a.nh * splits;
    part_o = static_cast<float*>(scratch.get(rows * (size_t(a.d) + 2) * sizeof(float)));
    part_ml = part_o + rows * size_t(a.d);
  }
  if (tensor_core_rows > 0) launch_tensor_core_decode(l, a, part_o, part_ml, splits, R);
  else launch_portable_decode(l, a, part_o, part_ml, splits, R);
  if (splits > 1) {
    launch_overlapping(l, merge_splits_kernel, unsigned(a.T * a.nh), 128, size_t(splits) * sizeof(float), part_o,
                       part_ml, a.out, splits, a.d);
    GPU_CHECK_LAUNCH();
  }
}

}  // namespace dcu::gpu
