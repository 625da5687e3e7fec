// Prefill attention on NVIDIA tensor cores (CUDA, sm_80+, native 32-lane warps) for 16-bit and 8-bit
// KV caches: attention.cu's tiled prefill (flash-attention 2) with both products on mma.sync (mma.h).
// The f32 kernel reaches ~19 TFLOP/s at the 27B shape (G = 6, d = 256); every K/V element read from
// shared memory here feeds 16 query rows of a warp's m16 tile at the tensor cores' rate.
//
// Query rows are (token row, head of the GQA group) pairs, flattened as attention.cu does: row qr of a
// block is token r0 + qr / G, head kvh G + qr % G. A block of 4 warps owns kRows = 64 query rows (bq =
// 64 / G token rows) of one KV head; warp w owns rows 16 w .. 16 w + 15, an m16 tile. The block walks
// the context in tiles of TKV positions, staged in shared memory by cp.async (K of the next tile while
// P V of this one runs, V while Q K^T runs), positions past the block's last zero-filled.
//
// S [16 rows x TKV positions] = Q K^T, k over d: per 32 d, lane (g, t) loads 16 bytes (8 d at 32 c + 8 t)
// of query rows g, g + 8 and of K row (position) 8 n + g per n8 tile; they fill its A and B slots of two
// k16 multiplies (as in decode_attention_tensor_core.cu: one permutation of d for A and B, so the sums
// are unchanged and every load is a 16-byte vector). S's C fragment (row g, positions 2t, 2t + 1 of
// each n8 tile; row g + 8 the same) is exactly the A fragment of P [16 rows x 16 positions] for
// O = P V, so the probabilities never leave the lane. V's B fragment (positions 2t, 2t + 1 for d g)
// comes from ldmatrix.trans of the [position][d] tile, four 8 x 8 blocks (two n8 tiles of d) at once.
//
// Q and P enter as hi + lo 16-bit parts (two multiplies each), so scores and outputs keep about 16 bits;
// in the medium matmul precision (Launch::split_activations false; Split = false) as one rounded part,
// one multiply each, as vLLM's and llama.cpp's flash attention compute. K and V are exact (a 16-bit
// cache, or int8 codes, converted to bf16 exactly once per block when staged, with the rows' scales
// applied to the scores and to P). The softmax is online, per tile, in
// base 2 (Q is scaled by log2 e); a row's max reduces over the 4 lanes of its quad. Causal: a query row
// of position pos sees positions <= pos; tiles past a warp's last position are skipped. Rows of a
// block that belong to different sequences are served one sequence after another, as attention.cu does.
//
// Shared memory, rows of 16-bit elements with their 16-byte chunks XOR-swizzled (chunk_at):
//   q_hi, q_lo (Split only) [kRows][D] | k, v [TKV][D] | int8 only: raw codes [TKV][D], k and v scales
//   [TKV] f32. d = 256: TKV = 32, 96 KiB (104 KiB int8; without q_lo 32 KiB less), two blocks per SM (the
//   registers); d = 64, 128: TKV = 64.

#include <cmath>

#include "backend/gpu/attention_common.h"
#include "backend/gpu/mma.h"

namespace dcu::gpu {
#if defined(DCUSERVE_CUDA)
namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows of a block

template <typename E> using MmaOf = std::conditional_t<std::is_same_v<E, F16>, F16, Bf16>;

// Positions per K/V tile: d = 256 keeps 2 blocks per SM (shared memory) and its accumulators in registers.
template <int D> constexpr int kTileOf = D == 256 ? 32 : 64;

// Query parts in shared memory: hi + lo, or the rounded one.
template <bool Split> constexpr int kQueryParts = Split ? 2 : 1;

template <typename E, int D, bool Split>
constexpr size_t smem_bytes() {
  constexpr size_t T = kTileOf<D>;
  constexpr size_t int8_extra = std::is_same_v<E, Int8Code> ? T * D + 2 * T * sizeof(float) : 0;  // codes, scales
  return (kQueryParts<Split> * kRows + 2 * T) * D * 2 + int8_extra;
}

// Byte offset of 16-byte chunk ch (8 elements) of row r in a tile of 16-bit rows of D elements. The
// chunk index is XOR-ed with ((r & 1) << 2) | ((r >> 1) & 3): the fragment loads (rows 2i, 2i + 1 of a
// quarter warp, 4 chunks each) and ldmatrix (8 consecutive rows, one chunk) hit 8 distinct bank groups.
template <int D>
__device__ __forceinline__ uint32_t chunk_at(int r, int ch) {
  return uint32_t(r * 2 * D + 16 * (ch ^ (((r & 1) << 2) | ((r >> 1) & 3))));
}

// Four transposed 8 x 8 blocks of 16-bit elements: lane 8 i + r gives the address of row r of block i;
// b[i] gets (rows 2t, 2t + 1; column g) of block i. Volatile: the tile's contents change between calls.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&b)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(addr)
               : "memory");
}

// grid (nkv, ceil(T / bq)), block kThreads, dynamic shared memory smem_bytes<E, D, Split>().
template <typename E, int D, bool Split>
__global__ void __launch_bounds__(kThreads, 2) tensor_core_prefill_kernel(PagedAttentionArgs a, int bq) {
#if __CUDA_ARCH__ >= 800
  using M = MmaOf<E>;
  constexpr bool kInt8 = std::is_same_v<E, Int8Code>;
  constexpr int TKV = kTileOf<D>, NT = TKV / 8;  // n8 tiles of positions per tile
  constexpr int kChunk = 16 / sizeof(E);          // cache elements per 16-byte copy
  constexpr int TPR = kThreads / TKV;             // threads staging one position's row
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* const q_hi = smem;
  unsigned char* const q_lo = q_hi + kRows * D * 2;  // Split only
  unsigned char* const k_tile = q_hi + kQueryParts<Split> * kRows * D * 2;
  unsigned char* const v_tile = k_tile + TKV * D * 2;
  unsigned char* const raw = v_tile + TKV * D * 2;  // int8: the codes as copied, before conversion
  float* const k_sc = reinterpret_cast<float*>(raw + TKV * D);
  float* const v_sc = k_sc + TKV;
  const uint32_t shared_base = uint32_t(__cvta_generic_to_shared(smem));
  auto shared_addr = [&](const void* p) {
    return shared_base + uint32_t(static_cast<const unsigned char*>(p) - smem);
  };
  start_after_previous_kernel();
  const int G = a.nh / a.nkv, R = bq * G, kvh = blockIdx.x;
  // The last rows first: causal blocks grow with their rows, and the longest should not start last.
  const int r0 = (gridDim.y - 1 - blockIdx.y) * bq, r1 = min(a.T, r0 + bq);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Q [kRows][D] scaled by scale * log2(e), as hi + lo (or hi), once for all sequences of the block
  // (zeros past R).
  const float q_scale = a.scale * 1.4426950408889634f;
  for (int e = threadIdx.x; e < kRows * D / 8; e += kThreads) {
    const int qr = e / (D / 8), ch = e % (D / 8);
    float4 x[2] = {};
    if (qr < R && r0 + qr / G < a.T) {
      const float4* q = reinterpret_cast<const float4*>(a.q + (int64_t(r0 + qr / G) * a.nh + kvh * G + qr % G) * D);
      x[0] = q[2 * ch], x[1] = q[2 * ch + 1];
    }
    uint4 hi, lo;
    split_pair<M>(x[0].x * q_scale, x[0].y * q_scale, hi.x, lo.x);
    split_pair<M>(x[0].z * q_scale, x[0].w * q_scale, hi.y, lo.y);
    split_pair<M>(x[1].x * q_scale, x[1].y * q_scale, hi.z, lo.z);
    split_pair<M>(x[1].z * q_scale, x[1].w * q_scale, hi.w, lo.w);
    *reinterpret_cast<uint4*>(q_hi + chunk_at<D>(qr, ch)) = hi;
    if constexpr (Split) *reinterpret_cast<uint4*>(q_lo + chunk_at<D>(qr, ch)) = lo;
  }  // the first barrier of the tile loop orders these writes before the fragment reads

  const E* kc = static_cast<const E*>(a.k_cache) + int64_t(kvh) * D;
  const E* vc = static_cast<const E*>(a.v_cache) + int64_t(kvh) * D;
  const int64_t kv_row = int64_t(a.nkv) * D;
  const int s_last = sequence_of(a.seq_row_begin, a.num_seqs, r1 - 1);
  for (int s = sequence_of(a.seq_row_begin, a.num_seqs, r0); s <= s_last; ++s) {
    const int rb = max(r0, a.seq_row_begin[s]), re = min(r1, a.seq_row_begin[s + 1]);
    if (rb >= re) continue;
    const int32_t* blocks = a.block_tables + int64_t(s) * a.max_blocks;
    int pmax = 0;  // the last position any row of the sequence here sees: all of 0 .. pmax is written
    for (int r = rb; r < re; ++r) pmax = max(pmax, a.positions[r]);
    // The last position each of the lane's query rows (16 w + g, 16 w + g + 8) sees; -1: none (padding,
    // another sequence's row).
    int limit[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int qr = 16 * warp + g + 8 * i, row = r0 + qr / G;
      limit[i] = qr < R && row >= rb && row < re ? a.positions[row] : -1;
    }
    const int warp_limit = __reduce_max_sync(~0u, max(limit[0], limit[1]));
    auto slot_of = [&](int p) { return int64_t(blocks[p / a.block_size]) * a.block_size + p % a.block_size; };

    // Positions p0 .. p0 + TKV - 1 of `cache` into `tile` (int8: into raw, and with `scales` the K and V
    // scales of those positions), zeros past pmax. Thread i copies chunks i % TPR + TPR k of position
    // i / TPR (one block-table look-up per thread) and converts (landed) exactly those.
    auto stage = [&](const E* cache, unsigned char* tile, int p0, bool scales) {
      const int j = threadIdx.x / TPR, p = p0 + j;
      const bool valid = p <= pmax;
      const int64_t slot = valid ? slot_of(p) : 0;
      const E* src = cache + slot * kv_row;
      for (int ch = threadIdx.x % TPR; ch < D / kChunk; ch += TPR)
        copy_async<16>(shared_addr(kInt8 ? raw + j * D + 16 * ch : tile + chunk_at<D>(j, ch)), src + kChunk * ch, valid);
      if constexpr (kInt8) {
        if (scales && threadIdx.x % TPR < 2) {  // lanes 0 and 1 of the position: its K and V scale
          const bool k = threadIdx.x % TPR == 0;
          copy_async<4>(shared_addr((k ? k_sc : v_sc) + j), (k ? a.k_scale : a.v_scale) + slot * a.nkv + kvh, valid);
        }
      }
      copy_async_commit();
    };
    // Waits for this thread's copies; int8 codes become exact bf16 pairs in `tile`. A barrier follows.
    auto landed = [&](unsigned char* tile) {
      copy_async_wait<0>();
      if constexpr (kInt8) {
        const int j = threadIdx.x / TPR;
        for (int ch = threadIdx.x % TPR; ch < D / 16; ch += TPR) {
          const uint4 codes = *reinterpret_cast<const uint4*>(raw + j * D + 16 * ch);
          *reinterpret_cast<uint4*>(tile + chunk_at<D>(j, 2 * ch)) = int8_pairs(make_uint2(codes.x, codes.y));
          *reinterpret_cast<uint4*>(tile + chunk_at<D>(j, 2 * ch + 1)) = int8_pairs(make_uint2(codes.z, codes.w));
        }
      }
    };

    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows g, g + 8: running max (base 2), lane's sum
    float o[D / 8][4] = {};  // O: n8 tile j holds d 8 j + 2t, + 1 of rows g (0, 1) and g + 8 (2, 3)
    stage(kc, k_tile, 0, true);
    for (int p0 = 0; p0 <= pmax; p0 += TKV) {
      landed(k_tile);
      __syncthreads();  // K visible; every warp's P V of the previous tile is done: V free
      stage(vc, v_tile, p0, false);
      const bool active = p0 <= warp_limit;  // some row of the warp sees a position of the tile
      uint32_t ph[TKV / 16][4], pl[TKV / 16][4];  // P's A fragments per k16 step of positions: hi, lo (Split)
      if (active) {
        float sc[NT][4] = {};  // S: Q's hi and lo parts into one accumulator (registers for o at d = 256)
#pragma unroll
        for (int c = 0; c < D / 32; ++c) {
          const int ch = 4 * c + t;
          const uint4 qh0 = *reinterpret_cast<const uint4*>(q_hi + chunk_at<D>(16 * warp + g, ch));
          const uint4 qh1 = *reinterpret_cast<const uint4*>(q_hi + chunk_at<D>(16 * warp + g + 8, ch));
          uint4 ql0{}, ql1{};
          if constexpr (Split) {
            ql0 = *reinterpret_cast<const uint4*>(q_lo + chunk_at<D>(16 * warp + g, ch));
            ql1 = *reinterpret_cast<const uint4*>(q_lo + chunk_at<D>(16 * warp + g + 8, ch));
          }
#pragma unroll
          for (int n = 0; n < NT; ++n) {
            const uint4 k = *reinterpret_cast<const uint4*>(k_tile + chunk_at<D>(8 * n + g, ch));
            mma<M>(sc[n], qh0.x, qh1.x, qh0.y, qh1.y, k.x, k.y);
            mma<M>(sc[n], qh0.z, qh1.z, qh0.w, qh1.w, k.z, k.w);
            if constexpr (Split) {
              mma<M>(sc[n], ql0.x, ql1.x, ql0.y, ql1.y, k.x, k.y);
              mma<M>(sc[n], ql0.z, ql1.z, ql0.w, ql1.w, k.z, k.w);
            }
          }
        }
        float p[NT][4], mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int j = 8 * n + 2 * t + u % 2;  // position p0 + j, query row g + 8 (u / 2)
            float x = sc[n][u];
            if constexpr (kInt8) x *= k_sc[j];
            if (p0 + j > limit[u / 2]) x = -INFINITY;
            p[n][u] = x, mx[u / 2] = fmaxf(mx[u / 2], x);
          }
        float ref[2], corr[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          mx[i] = fmaxf(mx[i], __shfl_xor_sync(~0u, mx[i], 1));
          mx[i] = fmaxf(mx[i], __shfl_xor_sync(~0u, mx[i], 2));
          const float m_new = fmaxf(m[i], mx[i]);
          ref[i] = m_new == -INFINITY ? 0.0f : m_new;  // a row that sees nothing yet keeps p = 0
          corr[i] = exp2f(m[i] - ref[i]), m[i] = m_new, l[i] *= corr[i];
        }
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            p[n][u] = exp2f(p[n][u] - ref[u / 2]);
            l[u / 2] += p[n][u];
            if constexpr (kInt8) p[n][u] *= v_sc[8 * n + 2 * t + u % 2];
          }
#pragma unroll
        for (int kk = 0; kk < TKV / 16; ++kk)
#pragma unroll
          for (int i = 0; i < 4; ++i) {  // a0 .. a3: rows g, g + 8 of n8 tile 2 kk, then of 2 kk + 1
            const float* pair = &p[2 * kk + i / 2][2 * (i % 2)];
            if constexpr (Split) split_pair<M>(pair[0], pair[1], ph[kk][i], pl[kk][i]);
            else ph[kk][i] = pack_pair<M>(pair[0], pair[1]);
          }
#pragma unroll
        for (int j = 0; j < D / 8; ++j) o[j][0] *= corr[0], o[j][1] *= corr[0], o[j][2] *= corr[1], o[j][3] *= corr[1];
      }
      landed(v_tile);
      __syncthreads();  // V visible; every warp is done with K (and the scales): the next K may land
      if (p0 + TKV <= pmax) stage(kc, k_tile, p0 + TKV, true);
      if (active) {
        // ldmatrix block i: positions 16 kk + 8 (i % 2) .. + 7, d 16 jj + 8 (i / 2) .. + 7; blocks 0, 1
        // are b0, b1 of n8 tile 2 jj of d, blocks 2, 3 those of 2 jj + 1.
        const int block_row = 8 * (lane / 8 % 2) + lane % 8, block_ch = lane / 16;
#pragma unroll
        for (int kk = 0; kk < TKV / 16; ++kk)
#pragma unroll
          for (int jj = 0; jj < D / 16; ++jj) {
            uint32_t b[4];
            ldmatrix_x4_trans(shared_addr(v_tile + chunk_at<D>(16 * kk + block_row, 2 * jj + block_ch)), b);
            mma<M>(o[2 * jj], ph[kk][0], ph[kk][1], ph[kk][2], ph[kk][3], b[0], b[1]);
            mma<M>(o[2 * jj + 1], ph[kk][0], ph[kk][1], ph[kk][2], ph[kk][3], b[2], b[3]);
            if constexpr (Split) {
              mma<M>(o[2 * jj], pl[kk][0], pl[kk][1], pl[kk][2], pl[kk][3], b[0], b[1]);
              mma<M>(o[2 * jj + 1], pl[kk][0], pl[kk][1], pl[kk][2], pl[kk][3], b[2], b[3]);
            }
          }
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l[i] += __shfl_xor_sync(~0u, l[i], 1);
      l[i] += __shfl_xor_sync(~0u, l[i], 2);
      if (limit[i] < 0) continue;
      const int qr = 16 * warp + g + 8 * i;
      float* out = a.out + (int64_t(r0 + qr / G) * a.nh + kvh * G + qr % G) * D + 2 * t;
      const float inv = 1.0f / l[i];
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<float2*>(out + 8 * j) = make_float2(o[j][2 * i] * inv, o[j][2 * i + 1] * inv);
    }
  }  // the next sequence's first copies land in buffers whose readers passed the last barrier
#endif
}

}  // namespace

bool tensor_core_prefill_fits(const Launch& l, const PagedAttentionArgs& a) {
  return l.lanes == 32 &&
         (a.cache_type == DType::BF16 || a.cache_type == DType::F16 || a.cache_type == DType::I8) &&
         (a.d == 64 || a.d == 128 || a.d == 256) && a.nh / a.nkv <= kRows;
}

void launch_tensor_core_prefill(const Launch& l, const PagedAttentionArgs& a) {
  with_cache_type(a.cache_type, [&](auto e) {
    using E = decltype(e);
    if constexpr (!std::is_same_v<E, float>) {
      auto go = [&](auto d, auto split) {
        constexpr int D = decltype(d)::value;
        constexpr bool Split = decltype(split)::value;
        auto kernel = tensor_core_prefill_kernel<E, D, Split>;
        constexpr size_t smem = smem_bytes<E, D, Split>();
        if (smem > 48 * 1024)
          GPU_CHECK(gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        const int bq = kRows / (a.nh / a.nkv);
        launch_overlapping(l, kernel, dim3(a.nkv, blocks_for(a.T, bq)), kThreads, smem, a, bq);
      };
      auto with_d = [&](auto split) {
        if (a.d == 64) go(std::integral_constant<int, 64>{}, split);
        else if (a.d == 128) go(std::integral_constant<int, 128>{}, split);
        else go(std::integral_constant<int, 256>{}, split);
      };
      if (l.split_activations) with_d(std::true_type{});
      else with_d(std::false_type{});
    }
  });
  GPU_CHECK_LAUNCH();
}

#else  // HIP: no tensor cores on gfx906

bool tensor_core_prefill_fits(const Launch&, const PagedAttentionArgs&) { return false; }
void launch_tensor_core_prefill(const Launch&, const PagedAttentionArgs&) {
  fail_call("launch_tensor_core_prefill", __FILE__, __LINE__, "no tensor cores in this build");
}

#endif
}  // namespace dcu::gpu
