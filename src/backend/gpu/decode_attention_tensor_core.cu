// Decode attention on NVIDIA tensor cores (CUDA, sm_80+, native 32-lane warps) for 16-bit and 8-bit
// KV caches: decode_attention.cu's flash-decoding split with the dot products on mma.sync (mma.h).
// With GQA every K/V element meets G query heads, 4 G flops per element read: at G = 6 and a 16-bit
// cache that is 12 flops per byte, more than an H200's f32 cores sustain at its memory bandwidth; the
// tensor cores do it at a fraction of their rate.
//
// A block serves one KV head, one context split and R rows of one sequence, R G <= 16 query rows
// (row r, head h at r G + h; one n8 tile of 8 for decode steps, two for verify steps of more rows),
// with kWarps warps taking 16-position tiles of the split in turn. Per tile a warp computes
// S^T [16 query rows x 16 positions] = Q K^T as two n8 tiles, k over d: lane (g, t) loads 16 bytes of
// K rows g and 8 + g at d = 32 c + 8 t, which fill its B slots of two k16 multiplies; Q's A slots take
// the same permutation of d (as in matmul_tensor_core.cu), so the sums are unchanged and every load is
// a 16-byte vector. S^T's C fragment holds (query rows g and 8 + g, positions 2t, 2t + 1, 8 + 2t,
// 9 + 2t): per n8 tile of query rows exactly the B fragment of P^T in O^T [d x query rows] = V^T P^T,
// so the probabilities never leave the lane. V^T's A fragment wants pairs of positions for one d:
// lane (g, t) loads 16 bytes of V rows 2t, 2t + 1, 8 + 2t, 9 + 2t at d = 64 b + 8 g and pairs them
// with byte permutes; m-tile (b, j) has d = 64 b + 8 g + j in its row g and 64 b + 8 g + 4 + j in its
// row g + 8.
//
// Q and P enter as hi + lo 16-bit parts (two multiplies each), so scores and outputs keep about 16
// bits; K and V are exact (a 16-bit cache, or int8 codes, with the rows' scales applied to the scores
// and to P). The softmax runs in base 2 (Q is scaled by log2 e). The warps' partial results merge in
// shared memory in a fixed order; with splits they go to decode_attention.cu's merge.
//
// An int8 cache multiplies in f16: its codes become f16 pairs in a few integer instructions
// (int8_f16_pairs; bf16 needed three times as many, and the kernel was bound by them, not by memory),
// and its scales are staged with the tile. P is scaled by each position's V scale over the tile's
// largest, so it stays in [0, 1], clear of f16's subnormals; the accumulators hold O in units of the
// last tile's largest scale and change units with the softmax's correction factor.

#include <cmath>

#include "backend/gpu/attention_common.h"
#include "backend/gpu/mma.h"

namespace dcu::gpu {
#if defined(DCUSERVE_CUDA)
namespace {

constexpr int kWarps = 4;
constexpr int kTile = 16;       // positions a warp takes at once
constexpr int kMaxQueryTiles = 2;  // n8 tiles of (row, head) pairs a block serves: 8 or 16 query rows

template <typename E> using MmaOf = std::conditional_t<std::is_same_v<E, Bf16>, Bf16, F16>;

// Elements [0, 8) of a cache row as four pairs of the multiply type (int8: the codes, exactly).
template <typename E>
__device__ __forceinline__ uint4 load8(const E* p) {
  if constexpr (std::is_same_v<E, Int8Code>) return int8_f16_pairs(*reinterpret_cast<const uint2*>(p));
  else return *reinterpret_cast<const uint4*>(p);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Shared memory of a block: the query rows (hi, lo), each warp's (max, sum) per query row, and each
// warp's two tile stages (K rows, V rows, an int8 cache's K and V scales [2][kTile]; the warp's partial
// output once its walk is done).
template <typename E, int D, int NQ>
struct DecodeShared {
  static constexpr int kQueryRows = 8 * NQ;
  static constexpr int kQueryPitch = D + 32;  // u16: the 8 lanes of a quarter warp (two rows) hit distinct banks
  static constexpr int kRowBytes = D * int(sizeof(E));
  // K rows are read 16 bytes at d = 32 c + 8 t for rows g, g + 8 (pitch 64 bytes past a multiple of
  // 128: two rows per quarter warp apart); V rows 2t, 2t + 1, 8 + 2t, 9 + 2t (16 bytes past: the four
  // t of a quarter warp's rows 0, 2, 4, 6 apart).
  static constexpr int kKPitch = kRowBytes + 64, kVPitch = kRowBytes + 16;
  static constexpr int kScaleBytes = std::is_same_v<E, Int8Code> ? 2 * kTile * int(sizeof(float)) : 0;
  static constexpr int kStageBytes = kTile * (kKPitch + kVPitch) + kScaleBytes;
  static constexpr size_t kBytes = 2 * sizeof(uint16_t) * kQueryRows * kQueryPitch +
                                   sizeof(float) * kWarps * kQueryRows * 2 + size_t(kWarps) * 2 * kStageBytes;
  static_assert(2 * kStageBytes >= int(sizeof(float)) * kQueryRows * D, "a warp's output fits its stages");
};

// NQ n8 tiles of query rows: 1 for decode steps, 2 for verify steps of more than 8 / G rows (the m16
// tile of Q K^T then fills both its row halves, P^T V runs per query tile).
template <typename E, int D, int NQ>
__global__ void __launch_bounds__(kWarps * 32)
    tensor_core_decode_kernel(PagedAttentionArgs a, float* part_o, float* part_ml, int splits, int R) {
#if __CUDA_ARCH__ >= 800
  using M = MmaOf<E>;
  using L = DecodeShared<E, D, NQ>;
  constexpr int kQueryRows = L::kQueryRows;
  constexpr bool kInt8 = std::is_same_v<E, Int8Code>;
  DYNAMIC_SHARED(uint4, smem4);
  auto q_hi = reinterpret_cast<uint16_t(*)[L::kQueryPitch]>(smem4);  // [kQueryRows][kQueryPitch]
  auto q_lo = q_hi + kQueryRows;
  auto warp_ml = reinterpret_cast<float(*)[kQueryRows][2]>(q_lo + kQueryRows);  // [kWarps]
  char* stages = reinterpret_cast<char*>(warp_ml + kWarps);                     // [kWarps][2][kStageBytes]
  start_after_previous_kernel();
  const int kvh = blockIdx.x, t0 = blockIdx.y, split = blockIdx.z;
  const int s = sequence_of(a.seq_row_begin, a.num_seqs, t0);
  const int first = a.seq_row_begin[s], rows = min(R, a.seq_row_begin[s + 1] - t0);
  if ((t0 - first) % R != 0) return;  // a row of the group another block serves
  const int G = a.nh / a.nkv, used = rows * G;
  const float q_scale = a.scale * 1.4426950408889634f;  // log2(e): exp2 below
  for (int i = threadIdx.x; i < kQueryRows * D / 2; i += blockDim.x) {
    const int qr = i / (D / 2), e = 2 * (i % (D / 2));
    float x0 = 0.0f, x1 = 0.0f;
    if (qr < used) {
      const float* q = a.q + (int64_t(t0 + qr / G) * a.nh + kvh * G + qr % G) * D + e;
      x0 = q[0] * q_scale, x1 = q[1] * q_scale;
    }
    uint32_t hi, lo;
    split_pair<M>(x0, x1, hi, lo);
    *reinterpret_cast<uint32_t*>(&q_hi[qr][e]) = hi;
    *reinterpret_cast<uint32_t*>(&q_lo[qr][e]) = lo;
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int32_t* blocks = a.block_tables + int64_t(s) * a.max_blocks;
  const int64_t kv_row = int64_t(a.nkv) * D;
  const char* kc = reinterpret_cast<const char*>(static_cast<const E*>(a.k_cache) + int64_t(kvh) * D);
  const char* vc = reinterpret_cast<const char*>(static_cast<const E*>(a.v_cache) + int64_t(kvh) * D);
  // Every position below the block's last row's is written; its rows' scores are masked each at its own.
  const int length = a.positions[t0 + rows - 1] + 1, split_len = split_length(length, splits);
  const int begin = split * split_len, end = min(length, begin + split_len);
  int row_end[NQ];  // query row 8 i + g attends below row_end[i]
#pragma unroll
  for (int i = 0; i < NQ; ++i) row_end[i] = 8 * i + g < used ? a.positions[t0 + (8 * i + g) / G] + 1 : 0;
  const int tile_u[4] = {2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t};    // the positions of the lane's scores
  // A tile lies in one cache block (block sizes are multiples of 16, tiles start at multiples of 16);
  // positions past the end take position p0's row, finite, and their scores are masked.
  auto slot = [&](int p0, int u) {
    const int64_t first_slot = int64_t(blocks[p0 / a.block_size]) * a.block_size + p0 % a.block_size;
    return p0 + u < end ? first_slot + u : first_slot;
  };
  char* my_stages = stages + warp * 2 * L::kStageBytes;
  // Starts copying tile p0's K and V rows into stage st (one group of this lane's copies).
  auto fetch = [&](int p0, int st) {
    char* ks = my_stages + st * L::kStageBytes;
    char* vs = ks + kTile * L::kKPitch;
    constexpr int kPieces = L::kRowBytes / 16;
#pragma unroll
    for (int i = lane; i < kTile * kPieces; i += 32) {
      const int u = i / kPieces, c = 16 * (i % kPieces);
      const int64_t at = slot(p0, u) * kv_row * int64_t(sizeof(E)) + c;
      copy_async<16>(shared_address(ks + u * L::kKPitch + c), kc + at);
      copy_async<16>(shared_address(vs + u * L::kVPitch + c), vc + at);
    }
    if constexpr (kInt8) {  // lane u < 16: K's scale of position u; lane 16 + u: V's
      const float* scales = lane < kTile ? a.k_scale : a.v_scale;
      copy_async<4>(shared_address(vs + kTile * L::kVPitch + 4 * lane), scales + slot(p0, lane % kTile) * a.nkv + kvh);
    }
    copy_async_commit();
  };
  // Query row 8 i + g's running max (base 2) and this lane's part of its sum; O^T m-tiles (b, j) of
  // query tile i, see the top.
  float m[NQ], l[NQ], acc[NQ][D / 64][4][4] = {};
  float acc_unit = 1.0f;  // int8: acc holds O / acc_unit
#pragma unroll
  for (int i = 0; i < NQ; ++i) m[i] = -INFINITY, l[i] = 0.0f;
  constexpr int kStride = kTile * kWarps;
  if (begin + kTile * warp < end) fetch(begin + kTile * warp, 0);
  for (int p0 = begin + kTile * warp, st = 0; p0 < end; p0 += kStride, st ^= 1) {
    if (p0 + kStride < end) fetch(p0 + kStride, st ^ 1);
    else copy_async_commit();  // an empty group: the wait below always leaves one
    copy_async_wait<1>();
    __syncwarp();  // every lane's copies of this tile have landed
    const char* ks = my_stages + st * L::kStageBytes;
    const char* vs = ks + kTile * L::kKPitch;
    // S^T from Q's hi and lo parts, n8 tiles of positions 0-7, 8-15; query rows g (and g + 8: NQ = 2)
    float sh[2][4] = {}, sl[2][4] = {};
#pragma unroll
    for (int c = 0; c < D / 32; ++c) {
      uint4 qh[2] = {}, ql[2] = {};
#pragma unroll
      for (int i = 0; i < NQ; ++i) {
        qh[i] = *reinterpret_cast<const uint4*>(&q_hi[8 * i + g][32 * c + 8 * t]);
        ql[i] = *reinterpret_cast<const uint4*>(&q_lo[8 * i + g][32 * c + 8 * t]);
      }
#pragma unroll
      for (int n = 0; n < 2; ++n) {
        const uint4 k = load8(reinterpret_cast<const E*>(ks + (8 * n + g) * L::kKPitch) + 32 * c + 8 * t);
        mma<M>(sh[n], qh[0].x, qh[1].x, qh[0].y, qh[1].y, k.x, k.y);
        mma<M>(sh[n], qh[0].z, qh[1].z, qh[0].w, qh[1].w, k.z, k.w);
        mma<M>(sl[n], ql[0].x, ql[1].x, ql[0].y, ql[1].y, k.x, k.y);
        mma<M>(sl[n], ql[0].z, ql[1].z, ql[0].w, ql[1].w, k.z, k.w);
      }
    }
    float v_scale[4] = {}, k_scale[4] = {}, unit_change = 1.0f;
    if constexpr (kInt8) {
      const float* scales = reinterpret_cast<const float*>(vs + kTile * L::kVPitch);  // [2][kTile]
      float largest = 0.0f;
#pragma unroll
      for (int u = 0; u < 4; ++u)
        k_scale[u] = scales[tile_u[u]], v_scale[u] = scales[kTile + tile_u[u]], largest = fmaxf(largest, v_scale[u]);
      largest = fmaxf(largest, __shfl_xor_sync(~0u, largest, 1));  // the 4 lanes of a row hold the 16 positions
      largest = fmaxf(fmaxf(largest, __shfl_xor_sync(~0u, largest, 2)), 1e-20f);  // (all-zero rows have scale 0)
      const float inverse = 1.0f / largest;
#pragma unroll
      for (int u = 0; u < 4; ++u) v_scale[u] *= inverse;
      unit_change = acc_unit * inverse, acc_unit = largest;
    }
    uint32_t ph[NQ][2], pl[NQ][2];
    float corr0[NQ], corr1[NQ];
#pragma unroll
    for (int i = 0; i < NQ; ++i) {
      float p[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        p[u] = sh[u / 2][2 * i + u % 2] + sl[u / 2][2 * i + u % 2];
        if constexpr (kInt8) p[u] *= k_scale[u];
        if (p0 + tile_u[u] >= row_end[i]) p[u] = -INFINITY;
      }
      float tile_max = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[2], p[3]));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(~0u, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(~0u, tile_max, 2));
      const float m_new = fmaxf(m[i], tile_max), ref = m_new == -INFINITY ? 0.0f : m_new;
      const float corr = exp2f(m[i] - ref);
#pragma unroll
      for (int u = 0; u < 4; ++u) p[u] = exp2f(p[u] - ref);
      l[i] = l[i] * corr + (p[0] + p[1]) + (p[2] + p[3]), m[i] = m_new;
      if constexpr (kInt8)
#pragma unroll
        for (int u = 0; u < 4; ++u) p[u] *= v_scale[u];
      split_pair<M>(p[0], p[1], ph[i][0], pl[i][0]);
      split_pair<M>(p[2], p[3], ph[i][1], pl[i][1]);
      // The accumulators' columns are query rows 8 i + 2t, + 1, whose factors lanes 8t and 8t + 4 hold.
      corr0[i] = __shfl_sync(~0u, corr, 8 * t) * unit_change, corr1[i] = __shfl_sync(~0u, corr, 8 * t + 4) * unit_change;
    }
#pragma unroll
    for (int b = 0; b < D / 64; ++b) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = load8(reinterpret_cast<const E*>(vs + tile_u[u] * L::kVPitch) + 64 * b + 8 * g);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int low = j / 2, high = 2 + j / 2;  // the words of elements j and 4 + j
        const uint32_t sel = j % 2 ? 0x7632u : 0x5410u;
        const uint32_t a0 = __byte_perm(word(v[0], low), word(v[1], low), sel);
        const uint32_t a1 = __byte_perm(word(v[0], high), word(v[1], high), sel);
        const uint32_t a2 = __byte_perm(word(v[2], low), word(v[3], low), sel);
        const uint32_t a3 = __byte_perm(word(v[2], high), word(v[3], high), sel);
#pragma unroll
        for (int i = 0; i < NQ; ++i) {
          float(&o)[4] = acc[i][b][j];
          o[0] *= corr0[i], o[1] *= corr1[i], o[2] *= corr0[i], o[3] *= corr1[i];
          mma<M>(o, a0, a1, a2, a3, ph[i][0], ph[i][1]);
          mma<M>(o, a0, a1, a2, a3, pl[i][0], pl[i][1]);
        }
      }
    }
    __syncwarp();  // the stage is refilled next-but-one tile
  }
  copy_async_wait<0>();
  __syncwarp();
  auto warp_o = [&](int w) { return reinterpret_cast<float(*)[D]>(stages + w * 2 * L::kStageBytes); };  // [kQueryRows][D]
#pragma unroll
  for (int i = 0; i < NQ; ++i) {
    l[i] += __shfl_xor_sync(~0u, l[i], 1);
    l[i] += __shfl_xor_sync(~0u, l[i], 2);
    if (t == 0) warp_ml[warp][8 * i + g][0] = m[i], warp_ml[warp][8 * i + g][1] = l[i];
#pragma unroll
    for (int b = 0; b < D / 64; ++b)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          warp_o(warp)[8 * i + 2 * t + r % 2][64 * b + 8 * g + 4 * (r / 2) + j] = acc[i][b][j][r] * acc_unit;
  }
  __syncthreads();
  // The warps merge in a fixed order (graph replays and eager steps agree bit for bit).
  for (int i = threadIdx.x; i < used * D; i += blockDim.x) {
    const int qr = i / D, e = i % D;
    float mr = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mr = fmaxf(mr, warp_ml[w][qr][0]);
    float lr = 0.0f, o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float weight = warp_ml[w][qr][1] > 0.0f ? exp2f(warp_ml[w][qr][0] - mr) : 0.0f;
      lr += weight * warp_ml[w][qr][1], o += weight * warp_o(w)[qr][e];
    }
    const int64_t h = int64_t(t0 + qr / G) * a.nh + kvh * G + qr % G;
    if (splits == 1) {
      a.out[h * D + e] = o / lr;
    } else {
      part_o[(h * splits + split) * D + e] = o;
      if (e == 0) part_ml[(h * splits + split) * 2] = mr * 0.6931471805599453f, part_ml[(h * splits + split) * 2 + 1] = lr;
    }
  }
#endif
}

}  // namespace

int tensor_core_decode_rows(const Launch& l, const PagedAttentionArgs& a) {
  const int G = a.nh / a.nkv;
  const bool fits = l.lanes == 32 && (a.cache_type == DType::BF16 || a.cache_type == DType::F16 ||
                                      a.cache_type == DType::I8) &&
                    (a.d == 64 || a.d == 128 || a.d == 256) && G <= 8 && a.block_size % kTile == 0;
  return fits ? std::min(8 * kMaxQueryTiles / G, std::max(a.max_seq_rows, 1)) : 0;
}

void launch_tensor_core_decode(const Launch& l, const PagedAttentionArgs& a, float* part_o, float* part_ml, int splits,
                               int R) {
  with_cache_type(a.cache_type, [&](auto e) {
    using E = decltype(e);
    if constexpr (!std::is_same_v<E, float>) {
      auto go = [&](auto d, auto nq) {
        constexpr int D = decltype(d)::value, NQ = decltype(nq)::value;
        auto kernel = tensor_core_decode_kernel<E, D, NQ>;
        const size_t smem = DecodeShared<E, D, NQ>::kBytes;
        GPU_CHECK(gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        launch_overlapping(l, kernel, dim3(a.nkv, a.T, splits), kWarps * 32, smem, a, part_o, part_ml, splits, R);
      };
      using std::integral_constant;
      auto with_d = [&](auto nq) {
        if (a.d == 64) go(integral_constant<int, 64>{}, nq);
        else if (a.d == 128) go(integral_constant<int, 128>{}, nq);
        else go(integral_constant<int, 256>{}, nq);
      };
      if (R * (a.nh / a.nkv) > 8) with_d(integral_constant<int, 2>{});
      else with_d(integral_constant<int, 1>{});
    }
  });
  GPU_CHECK_LAUNCH();
}

#else  // HIP: no tensor cores on gfx906

int tensor_core_decode_rows(const Launch&, const PagedAttentionArgs&) { return 0; }
void launch_tensor_core_decode(const Launch&, const PagedAttentionArgs&, float*, float*, int, int) {
  fail_call("launch_tensor_core_decode", __FILE__, __LINE__, "no tensor cores in this build");
}

#endif
}  // namespace dcu::gpu
