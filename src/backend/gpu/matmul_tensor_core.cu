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
// The activations are split once (launch_split16) into 16-bit hi and lo arrays, once for a whole group
// of matrices that read them (one launch for all); the medium precision mode rounds them to hi only
// and multiplies once. A block of 4 or 8 warps owns 32 weight rows per warp and stages each 64-k chunk
// of the activations in shared memory once for all of them; the grid splits K until there are 16-32
// warps per SM, and the splits' partial sums are added in split order by a second kernel
// (deterministic; summing them in thread-block clusters instead measured slower, round 10). Measured
// in docs/PERFORMANCE_GPU.md (rounds 5, 9 and 10).
//
// Quantized weights (backend/linear.h) take the same path for 1..32 rows: a lane loads the codes of
// its 8 k (8 bytes of int8 or fp8, 4 of int4) and turns them into the bf16 fragment in registers,
// exactly (int8: through f32's 2^23 + q; int4: the codes of k, k + 1 OR-ed into the mantissas of 128 =
// 0x4300, minus 128 + zero; fp8: fp8_value, whose values bf16 holds), so the multiplies sum q * x;
// each row's scale multiplies the sums once per 32-k step (group scales) or once at the end (one scale
// per row).

#include <algorithm>

#include "backend/gpu/kernels.h"
#include "backend/gpu/mma.h"

#if defined(DCUSERVE_CUDA)

namespace dcu::gpu {
namespace {

constexpr int kTileRows = 32;                       // weight rows per warp: two m16 tiles
constexpr int kChunkK = 64;                         // k staged in shared memory per iteration: two k32 steps
// Quantized codes are smaller, so a chunk spans more k (four and eight k32 steps) to keep as many
// bytes of weights in flight per lane as 16-bit weights do (64-k chunks of int4 ran at a quarter of
// the copy bandwidth, as slow as int8).
template <typename W>
constexpr int kChunkOf = std::is_same_v<W, Int4Pair> ? 4 * kChunkK : kQuantized<W> ? 2 * kChunkK : kChunkK;
// Warps the grid should have, about 16 (up to 16 rows) or 32 (more rows) per SM of an H200 (132 SMs).
constexpr int kGridWarps = 2112, kGridWarpsWide = 4224;

// The matrices of one launch: part p owns the blocks [block_end[p - 1], block_end[p]) of the grid's x.
struct TensorCoreParts {
  const void* w[kMaxMatmulGroup];         // [N, K] 16-bit, or the codes of a quantized weight
  const float* scales[kMaxMatmulGroup];   // quantized: [N, K / group]
  const uint8_t* zeros[kMaxMatmulGroup];  // Int4: [N, K / group], or null (8)
  int group;                              // quantized: k per scale
  float* out[kMaxMatmulGroup];            // [S, T, N] this part's partial sums per K split (y itself when S = 1)
  int N[kMaxMatmulGroup];
  int block_end[kMaxMatmulGroup];
};

// The 16-bit type the multiplies take for weights of type W (quantized codes become bf16).
template <typename W> using MmaType = std::conditional_t<kQuantized<W>, Bf16, W>;

// What a lane loads of one weight row for 8 k: 16 bytes of 16-bit weights, 8 one-byte codes (int8,
// fp8), 8 int4 codes.
template <typename W> using RawWeights = std::conditional_t<std::is_same_v<W, Int4Pair>, uint32_t,
                                                            std::conditional_t<kQuantized<W>, uint2, uint4>>;

template <typename W>
__device__ __forceinline__ RawWeights<W> load_weights(const void* w, int64_t row, int K, int k) {
  constexpr int E = kCodesPerElement<W>;
  const auto* p = static_cast<const W*>(w) + row * (K / E) + k / E;
  return __ldcs(reinterpret_cast<const RawWeights<W>*>(p));
}

// The 16-bit pairs (k, k + 1) .. (k + 6, k + 7) of a lane's 8 weights: 16-bit weights as loaded, and
// bf16 holding exactly q (int8), q - zero (int4) or the E4M3 values (fp8).
template <typename W>
__device__ __forceinline__ uint4 fragment(RawWeights<W> raw, float zero) {
  if constexpr (std::is_same_v<W, Int8Code>) {
    return int8_pairs(raw);
  } else if constexpr (std::is_same_v<W, Int4Pair>) {
    const __nv_bfloat162 bias = __floats2bfloat162_rn(128.0f + zero, 128.0f + zero);
    uint32_t pairs[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t biased = ((raw >> (4 * j)) & 0x000F000Fu) | 0x43004300u;  // 128 + q of k = 2j, 2j + 1
      const __nv_bfloat162 v = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&biased), bias);
      pairs[j] = *reinterpret_cast<const uint32_t*>(&v);
    }
    return make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  } else if constexpr (std::is_same_v<W, Fp8Code>) {
    uint32_t pairs[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t word = j < 2 ? raw.x : raw.y, shift = 16 * (j % 2);
      const __nv_bfloat162 v = __floats2bfloat162_rn(fp8_value(word >> shift), fp8_value(word >> (shift + 8)));
      pairs[j] = *reinterpret_cast<const uint32_t*>(&v);
    }
    return make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  } else {
    return raw;
  }
}

// grid (sum of ceil(N_p / (32 Warps)), S). Warp w of block (b, s) owns rows 32 (Warps b + w) .. + 31
// of its part's weights and k range [s * k_split, (s + 1) * k_split). x_hi, x_lo [T, K] (16-bit,
// x = hi + lo; Split false: x_hi alone, x_lo unused). NT n8 tiles of tokens.
// Grouped: quantized with a scale per group of k (else one per row, or none).
template <typename W, int NT, int Warps, bool Split, bool Grouped>
__global__ void __launch_bounds__(Warps * 32)
    tensor_core_matmul_kernel(const uint16_t* __restrict__ x_hi, const uint16_t* __restrict__ x_lo,
                              const TensorCoreParts parts, int T, int K, int k_split) {
#if __CUDA_ARCH__ >= 800
  using M = MmaType<W>;
  constexpr int Chunk = kChunkOf<W>, Steps = Chunk / 32;
  const int p = group_entry(parts.block_end, int(blockIdx.x));
  const void* __restrict__ w = group_pick(parts.w, p);
  const float* scales = kQuantized<W> ? group_pick(parts.scales, p) : nullptr;
  const uint8_t* zeros = kQuantized<W> ? group_pick(parts.zeros, p) : nullptr;
  const int groups = kQuantized<W> ? K / parts.group : 0;
  const int N = group_pick(parts.N, p), block = int(blockIdx.x) - (p > 0 ? group_pick(parts.block_end, p - 1) : 0);
  // The chunk's activations, one row of Chunk k (Chunk / 8 x 16 bytes) per token, staged once for all
  // warps. Rows padded by 4 x 16 bytes: the 8 lanes of a quarter warp (two tokens) hit distinct banks.
  __shared__ uint4 stage_hi[NT * 8][Chunk / 8 + 4], stage_lo[NT * 8][Chunk / 8 + 4];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const int row0 = block * Warps * kTileRows + warp * kTileRows;
  const int k_begin = blockIdx.y * k_split, k_end = min(K, k_begin + k_split);
  float acc[2][NT][4] = {};
  for (int kc = k_begin; kc < k_end; kc += Chunk) {
    // This warp's weights for the chunk (rows g, g + 8 of both tiles, 8 k per step), loaded before the
    // barrier so they are in flight while the activations are staged.
    RawWeights<W> raw[Steps][2][2] = {};  // [step][tile][row half]
#pragma unroll
    for (int step = 0; step < Steps; ++step)
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 16 * m + g + 8 * h;
          if (row < N) raw[step][m][h] = load_weights<W>(w, row, K, kc + 32 * step + 8 * c);
        }
    // Launched overlapping the activation split: its first weights are on their way before it ends.
    if (kc == k_begin) wait_for_previous_kernel();
    for (int i = threadIdx.x; i < NT * 8 * (Chunk / 8); i += Warps * 32) {
      const int token = i / (Chunk / 8), q = i % (Chunk / 8);
      const int64_t at = int64_t(token) * K + kc + 8 * q;
      const bool live = token < T;
      stage_hi[token][q] = live ? *reinterpret_cast<const uint4*>(x_hi + at) : make_uint4(0, 0, 0, 0);
      if constexpr (Split) stage_lo[token][q] = live ? *reinterpret_cast<const uint4*>(x_lo + at) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    // Step s: the lane's 8 k at 32 s + 8 c fill its A slots (a0, a2) of row g and (a1, a3) of row
    // g + 8 and, for token g of each tile, its B slots b0, b1 of two k16 halves (.x.y, then .z.w).
    // Consecutive multiplies in program order go to different (row tile, token tile) accumulators.
    // (Four independent accumulator sets per tile, summed at the end, measured 15-45 % slower at 8 and
    // 16 token rows.)
#pragma unroll
    for (int step = 0; step < Steps; ++step) {
      // Grouped: the step's 32 k lie in one group; its sums go through part[] and its rows' scales.
      const int kg = Grouped ? (kc + 32 * step) / parts.group : 0;
      uint4 a[2][2];
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = min(row0 + 16 * m + g + 8 * h, N - 1);
          const float zero = zeros ? float(zeros[int64_t(row) * groups + kg]) : 8.0f;
          a[m][h] = fragment<W>(raw[step][m][h], zero);
        }
      float part[2][NT][4] = {};
      uint4 bh[NT], bl[NT] = {};
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        bh[n] = stage_hi[8 * n + g][4 * step + c];
        if constexpr (Split) bl[n] = stage_lo[8 * n + g][4 * step + c];
      }
      // q: the k16 half (q / 2) times hi or lo (q % 2)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (!Split && q % 2 == 1) continue;
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int m = 0; m < 2; ++m) {
            const uint4 &r0 = a[m][0], &r1 = a[m][1];
            const uint4& b = q % 2 == 0 ? bh[n] : bl[n];
            float(&d)[4] = Grouped ? part[m][n] : acc[m][n];
            if (q < 2) mma<M>(d, r0.x, r1.x, r0.y, r1.y, b.x, b.y);
            else mma<M>(d, r0.z, r1.z, r0.w, r1.w, b.z, b.w);
          }
      }
      if constexpr (Grouped)
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          float s[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) s[h] = scales[int64_t(min(row0 + 16 * m + g + 8 * h, N - 1)) * groups + kg];
#pragma unroll
          for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[m][n][i] = fmaf(s[i / 2], part[m][n][i], acc[m][n][i]);
        }
    }
    __syncthreads();  // the stage is rewritten next iteration
  }
  if constexpr (kQuantized<W> && !Grouped)  // one scale per row
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float s = scales[min(row0 + 16 * m + g + 8 * (i / 2), N - 1)];
#pragma unroll
        for (int n = 0; n < NT; ++n) acc[m][n][i] *= s;
      }
  // Accumulator i of tile (m, n): row 16 m + g (+ 8 for i >= 2), token 8 n + 2 c (+ 1 for odd i).
  float* part = group_pick(parts.out, p) + int64_t(blockIdx.y) * T * N;
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

// The K splits' partial sums of every part, added in split order (deterministic): part p's outputs
// are elements [end[p - 1], end[p]) of the launch's flat index.
struct SplitSums {
  const float* parts[kMaxMatmulGroup];  // [S, T, N_p]
  float* y[kMaxMatmulGroup];            // [T, N_p]
  int64_t end[kMaxMatmulGroup];
};

__global__ void sum_splits_kernel(const SplitSums sums, int S) {
  start_after_previous_kernel();
  const int64_t total = sums.end[kMaxMatmulGroup - 1];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int p = group_entry(sums.end, i);
    const int64_t begin = p > 0 ? group_pick(sums.end, p - 1) : 0, n = group_pick(sums.end, p) - begin, at = i - begin;
    const float* parts = group_pick(sums.parts, p);
    float v = parts[at];
    for (int s = 1; s < S; ++s) v += parts[s * n + at];
    group_pick(sums.y, p)[at] = v;
  }
}

template <typename W>
void launch_typed(const Launch& l, const MatmulArgs* group, int count, Scratch& scratch) {
  const MatmulArgs& a = group[0];  // x, T and K are the group's
  const int T = int(a.T), K = int(a.K);
  // Blocks of 8 warps at 17..32 rows, where the multiplies are many and more warps share each staged
  // activation chunk; of 4 below, where smaller blocks overlap one another's weight loads better
  // (docs/PERFORMANCE_GPU.md, round 9).
  const int warps = T <= 16 ? 4 : 8, block_rows = warps * kTileRows;
  TensorCoreParts parts{};
  SplitSums sums{};
  int blocks = 0;
  int64_t outputs = 0;
  parts.group = int(a.group);
  for (int p = 0; p < count; ++p) {
    parts.w[p] = group[p].w;
    parts.scales[p] = group[p].scales;
    parts.zeros[p] = group[p].zeros;
    parts.N[p] = int(group[p].N);
    parts.block_end[p] = blocks += int(blocks_for(group[p].N, block_rows));
    sums.y[p] = group[p].y;
    outputs += int64_t(T) * group[p].N;
  }
  // Split K until the grid has about kGridWarps(Wide) warps (each split a multiple of the chunk).
  constexpr int Chunk = kChunkOf<W>;
  const int chunks = K / Chunk, grid_warps = T <= 16 ? kGridWarps : kGridWarpsWide;
  const int want = std::min(chunks, (grid_warps / warps + blocks - 1) / blocks);
  const int k_split = (chunks + want - 1) / want * Chunk, S = (K + k_split - 1) / k_split;
  const int64_t n = int64_t(T) * K;
  const int halves = l.split_activations ? 2 : 1;
  char* base = static_cast<char*>(scratch.get(size_t(halves * n) * 2 + (S > 1 ? size_t(S * outputs) * 4 : 0)));
  auto* hi = reinterpret_cast<uint16_t*>(base);
  auto* lo = halves == 2 ? hi + n : nullptr;
  int64_t at = 0;
  for (int p = 0; p < count; ++p) {
    const int64_t part_outputs = int64_t(T) * group[p].N;
    if (S > 1) parts.out[p] = reinterpret_cast<float*>(base + 2 * halves * n) + S * at;
    else parts.out[p] = group[p].y;
    sums.parts[p] = parts.out[p];
    sums.end[p] = at += part_outputs;
  }
  for (int p = count; p < kMaxMatmulGroup; ++p) sums.end[p] = at, parts.block_end[p] = blocks;  // group_entry
  const DType operand_type = std::is_same_v<MmaType<W>, Bf16> ? DType::BF16 : DType::F16;
  if (kIntegerCodes<W> && l.int8_activations) launch_round_split16(l, a.x, T, K, hi, lo, operand_type);
  else launch_split16(l, a.x, hi, lo, n, operand_type);
  const dim3 grid{unsigned(blocks), unsigned(S)};
  const bool grouped = kQuantized<W> && a.group < a.K;
  auto go = [&](auto tiles, auto block_warps) {
    constexpr int NT = decltype(tiles)::value, Warps = decltype(block_warps)::value;
    auto launch = [&](auto split, auto by_group) {
      constexpr bool Split = decltype(split)::value, Grouped = decltype(by_group)::value;
      if constexpr (Grouped && !kQuantized<W>) return;
      else launch_overlapping(l, tensor_core_matmul_kernel<W, NT, Warps, Split, Grouped>, grid, Warps * 32, 0, hi, lo,
                              parts, T, K, k_split);
    };
    using std::false_type, std::true_type;
    if (l.split_activations) grouped ? launch(true_type{}, true_type{}) : launch(true_type{}, false_type{});
    else grouped ? launch(false_type{}, true_type{}) : launch(false_type{}, false_type{});
  };
  using std::integral_constant;
  if (T <= 8) go(integral_constant<int, 1>{}, integral_constant<int, 4>{});
  else if (T <= 16) go(integral_constant<int, 2>{}, integral_constant<int, 4>{});
  else go(integral_constant<int, 4>{}, integral_constant<int, 8>{});
  GPU_CHECK_LAUNCH();
  if (S > 1) {
    launch_overlapping(l, sum_splits_kernel, unsigned(std::min<int64_t>((outputs + 255) / 256, 4096)), 256, 0, sums, S);
    GPU_CHECK_LAUNCH();
  }
}

}  // namespace

bool tensor_core_matmul_fits(const MatmulArgs& a) {
  const bool dense16 = a.format == WeightFormat::Dense && (a.w_type == DType::BF16 || a.w_type == DType::F16);
  const int chunk = a.format == WeightFormat::Int4 ? kChunkOf<Int4Pair>
                    : a.format != WeightFormat::Dense ? kChunkOf<Int8Code> : kChunkK;
  return (dense16 || a.format != WeightFormat::Dense) && a.T >= 1 && a.T <= kTensorCoreMaxTokens &&
         a.K % chunk == 0 && aligned16(a.w);
}

void launch_tensor_core_matmul(const Launch& l, const MatmulArgs* group, int count, Scratch& scratch) {
  switch (group[0].format) {
    case WeightFormat::Int8: return launch_typed<Int8Code>(l, group, count, scratch);
    case WeightFormat::Int4: return launch_typed<Int4Pair>(l, group, count, scratch);
    case WeightFormat::Fp8: return launch_typed<Fp8Code>(l, group, count, scratch);
    case WeightFormat::Dense: break;
  }
  if (group[0].w_type == DType::BF16) launch_typed<Bf16>(l, group, count, scratch);
  else launch_typed<F16>(l, group, count, scratch);
}

}  // namespace dcu::gpu
#endif
