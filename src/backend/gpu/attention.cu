// Gated full attention: q/k preparation (de-interleave, zero-centered norm, partial NeoX RoPE), paged
// KV writes, and causal GQA attention over the paged cache: steps with few rows per sequence (decode,
// speculative verify) go to the split decode kernel (decode_attention.cu); steps with a long run of
// rows (prefill) to prefill_attention_kernel, whose tiles of rows share K/V tiles in shared memory, or
// on NVIDIA with a 16-bit or int8 cache to its tensor-core form (prefill_attention_tensor_core.cu).

#include <algorithm>
#include <cmath>

#include "backend/gpu/attention_common.h"

namespace dcu::gpu {
namespace {

constexpr int kPrepThreads = 128;
constexpr int kAttnThreads = 256;
// The tiled prefill kernel runs for steps of at least this many rows, on average this many per sequence,
// one of which has more than kDecodeMaxRows (more rows than the decode kernel shares a block between).
constexpr int kPrefillMinRows = 64, kPrefillRowsPerSeq = 4, kDecodeMaxRows = 16;

// grid (T, nh + nkv), block kPrepThreads; dynamic shared memory d floats.
template <int Lanes, typename N>
__global__ void attention_prep_kernel(AttentionPrepArgs a, const N* q_norm, const N* k_norm) {
  start_after_previous_kernel();
  DYNAMIC_SHARED(float, head);
  __shared__ float scratch[kPrepThreads / 32];
  const int t = blockIdx.x, h = blockIdx.y, d = a.d;
  const bool is_q = h < a.nh;
  const N* norm = is_q ? q_norm : k_norm;
  const float* src = is_q ? a.qg + (int64_t(t) * a.nh + h) * 2 * d : a.k + (int64_t(t) * a.nkv + (h - a.nh)) * d;
  float* dst = is_q ? a.q + (int64_t(t) * a.nh + h) * d : a.k + (int64_t(t) * a.nkv + (h - a.nh)) * d;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    const float v = src[i];
    head[i] = v;
    ss += v * v;
    if (is_q) a.gate[(int64_t(t) * a.nh + h) * d + i] = src[d + i];
  }
  ss = block_sum<Lanes>(ss, scratch);  // also orders the head[] writes before the reads below
  const float inv = 1.0f / sqrtf(ss / float(d) + a.eps);
  for (int i = threadIdx.x; i < d; i += blockDim.x) head[i] = head[i] * inv * (1.0f + to_f32(norm[i]));
  __syncthreads();
  const int half = a.rotary_dim / 2;
  const float pos = float(a.positions[t]);
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    float v = head[i];
    if (i < 2 * half) {
      const int j = i < half ? i : i - half;
      const float inv_freq = 1.0f / powf(a.theta, float(2 * j) / float(a.rotary_dim));
      float s, c;
      sincosf(pos * inv_freq, &s, &c);
      v = i < half ? head[i] * c - head[i + half] * s : head[i] * c + head[i - half] * s;
    }
    dst[i] = v;
  }
}

template <typename E>
__global__ void kv_write_kernel(const float* k, const float* v, const int32_t* slots, E* kc, E* vc, int64_t row) {
  start_after_previous_kernel();
  const int64_t t = blockIdx.x, slot = slots[t];
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    from_f32(k[t * row + i], &kc[slot * row + i]);
    from_f32(v[t * row + i], &vc[slot * row + i]);
  }
}

// An 8-bit cache: grid (T, nkv, 2: K and V), one logical warp; codes round(x / scale) with
// scale = max |x| / 127 of the (token, head) row, as the CPU backend writes them.
template <int Lanes>
__global__ void kv_write_int8_kernel(const float* k, const float* v, const int32_t* slots, int8_t* kc, int8_t* vc,
                                     float* ks, float* vs, int nkv, int d) {
  start_after_previous_kernel();
  const int64_t t = blockIdx.x, h = blockIdx.y, slot = slots[t];
  const float* x = (blockIdx.z == 0 ? k : v) + (t * nkv + h) * d;
  int8_t* codes = (blockIdx.z == 0 ? kc : vc) + (slot * nkv + h) * d;
  float amax = 0.0f;
  for (int i = threadIdx.x; i < d; i += Lanes) amax = fmaxf(amax, fabsf(x[i]));
  amax = warp_max<Lanes>(amax);
  if (threadIdx.x == 0) (blockIdx.z == 0 ? ks : vs)[slot * nkv + h] = amax / 127.0f;
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int i = threadIdx.x; i < d; i += Lanes) codes[i] = int8_t(rintf(fminf(fmaxf(x[i] * inv, -127.0f), 127.0f)));
}

// Prefill rows (flash-attention style, f32). grid (nkv, ceil(T / bq)), block kAttnThreads. A block
// takes bq = TQ / G consecutive packed rows and one kv head: their R = bq * G query vectors share
// every tile of TKV cached positions, loaded once into shared memory. Scores and outputs are register
// tiles (a thread holds SR x 2 scores and RY rows x 4 VF dims of the output), so each shared-memory
// load feeds several FMAs; the softmax is online, per tile, reduced over the SX lanes that hold a
// score row. Rows of the tile that belong to different sequences are handled one after another.
// Shared: q [TQ][D + 4] | kv [TKV][D + 4] (K, then V) | p^T [TKV][TQ] | m, l, corr [TQ]
// (the +4 keeps rows float4-aligned and on different banks).
template <typename E, int D, int TQ, int TKV>
__global__ void __launch_bounds__(kAttnThreads) prefill_attention_kernel(PagedAttentionArgs a, int bq) {
  start_after_previous_kernel();
  constexpr int DP = D + 4;
  constexpr int SX = TKV / 2, SR = TQ / (kAttnThreads / SX);  // score tile: SX lanes per row group
  constexpr int XT = D / 4 < 32 ? D / 4 : 32, VF = D / (4 * XT), RY = TQ / (kAttnThreads / XT);
  static_assert(SR >= 1 && RY >= 1 && SX <= 32);
  DYNAMIC_SHARED(float4, smem4);
  float* qs = reinterpret_cast<float*>(smem4);
  float* kv = qs + TQ * DP;
  float* pt = kv + TKV * DP;
  float* ms = pt + TKV * TQ;
  float* ls = ms + TQ;
  float* cs = ls + TQ;
  const int G = a.nh / a.nkv, R = bq * G, kvh = blockIdx.x, tid = threadIdx.x;
  const int sx = tid % SX, sy = tid / SX;  // scores: rows SR sy + i, positions sx and sx + SX
  const int ox = tid % XT, oy = tid / XT;  // output: rows RY oy + i, dims 4 (ox + XT f) .. + 3
  const int r0 = blockIdx.y * bq, r1 = min(a.T, r0 + bq);
  const E* kc = static_cast<const E*>(a.k_cache);
  const E* vc = static_cast<const E*>(a.v_cache);
  const int64_t kv_row = int64_t(a.nkv) * D;
  auto row_of = [&](int qr) { return r0 + qr / G; };
  const int s_last = sequence_of(a.seq_row_begin, a.num_seqs, r1 - 1);
  for (int s = sequence_of(a.seq_row_begin, a.num_seqs, r0); s <= s_last; ++s) {
    const int rb = max(r0, a.seq_row_begin[s]), re = min(r1, a.seq_row_begin[s + 1]);
    if (rb >= re) continue;
    auto mine = [&](int qr) { return qr < R && row_of(qr) >= rb && row_of(qr) < re; };
    const int32_t* blocks = a.block_tables + int64_t(s) * a.max_blocks;
    int pmax = 0;
    for (int r = rb; r < re; ++r) pmax = max(pmax, a.positions[r]);
    __syncthreads();  // the previous sequence's readers of qs, ms are done
    for (int e = tid; e < TQ * (D / 4); e += kAttnThreads) {
      const int qr = e / (D / 4), i = 4 * (e % (D / 4));
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (mine(qr)) {
        v = *reinterpret_cast<const float4*>(a.q + (int64_t(row_of(qr)) * a.nh + kvh * G + qr % G) * D + i);
        v.x *= a.scale, v.y *= a.scale, v.z *= a.scale, v.w *= a.scale;
      }
      *reinterpret_cast<float4*>(qs + qr * DP + i) = v;
    }
    for (int qr = tid; qr < TQ; qr += kAttnThreads) ms[qr] = -INFINITY, ls[qr] = 0.0f;
    int limit[SR];  // the last position each score row sees (-1: padding, another sequence's row)
#pragma unroll
    for (int i = 0; i < SR; ++i) limit[i] = mine(SR * sy + i) ? a.positions[row_of(SR * sy + i)] : -1;
    float o[RY][4 * VF] = {};
    // Positions p0 .. p0 + TKV - 1 of `cache` (K or V) for this kv head into kv, zeros past pmax; an
    // 8-bit cache's codes times their row's scale.
    auto load_tile = [&](const E* cache, const float* scales, int p0) {
      for (int e = tid; e < TKV * (D / 4); e += kAttnThreads) {
        const int j = e / (D / 4), i = 4 * (e % (D / 4)), p = p0 + j;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (p <= pmax) {
          const int64_t slot = int64_t(blocks[p / a.block_size]) * a.block_size + p % a.block_size;
          load_elements<4>(cache + slot * kv_row + int64_t(kvh) * D + i, v);
          if constexpr (std::is_same_v<E, Int8Code>) {
            const float scale = scales[slot * a.nkv + kvh];
            for (float& x : v) x *= scale;
          }
        }
        *reinterpret_cast<float4*>(kv + j * DP + i) = make_float4(v[0], v[1], v[2], v[3]);
      }
    };

    for (int p0 = 0; p0 <= pmax; p0 += TKV) {
      load_tile(kc, a.k_scale, p0);
      __syncthreads();
      float sc[SR][2] = {};
#pragma unroll 4
      for (int i = 0; i < D; i += 4) {
        float4 qv[SR], kr[2];  // query rows, key rows (positions)
#pragma unroll
        for (int r = 0; r < SR; ++r) qv[r] = *reinterpret_cast<const float4*>(qs + (SR * sy + r) * DP + i);
#pragma unroll
        for (int c = 0; c < 2; ++c) kr[c] = *reinterpret_cast<const float4*>(kv + (sx + SX * c) * DP + i);
#pragma unroll
        for (int r = 0; r < SR; ++r)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            sc[r][c] += qv[r].x * kr[c].x + qv[r].y * kr[c].y + qv[r].z * kr[c].z + qv[r].w * kr[c].w;
      }
#pragma unroll
      for (int r = 0; r < SR; ++r) {  // online softmax over the SX lanes that hold row SR sy + r
        const int qr = SR * sy + r;
        float mx = -INFINITY;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          if (p0 + sx + SX * c > limit[r]) sc[r][c] = -INFINITY;
          mx = fmaxf(mx, sc[r][c]);
        }
        const float m_old = ms[qr], m = fmaxf(m_old, warp_max<SX>(mx));
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float e = m == -INFINITY ? 0.0f : expf(sc[r][c] - m);
          pt[(sx + SX * c) * TQ + qr] = e;
          sum += e;
        }
        sum = warp_sum<SX>(sum);
        if (sx == 0) {
          const float corr = m == -INFINITY ? 1.0f : expf(m_old - m);
          ms[qr] = m, ls[qr] = ls[qr] * corr + sum, cs[qr] = corr;
        }
      }
      __syncthreads();  // the K tile's readers are done; p and corr are written
      load_tile(vc, a.v_scale, p0);
      __syncthreads();
#pragma unroll
      for (int r = 0; r < RY; ++r) {
        const float corr = cs[RY * oy + r];
#pragma unroll
        for (int i = 0; i < 4 * VF; ++i) o[r][i] *= corr;
      }
#pragma unroll 4
      for (int j = 0; j < TKV; ++j) {
        float4 vv[VF];
#pragma unroll
        for (int f = 0; f < VF; ++f) vv[f] = *reinterpret_cast<const float4*>(kv + j * DP + 4 * (ox + XT * f));
#pragma unroll
        for (int r = 0; r < RY; ++r) {
          const float p = pt[j * TQ + RY * oy + r];
#pragma unroll
          for (int f = 0; f < VF; ++f) {
            o[r][4 * f] += p * vv[f].x, o[r][4 * f + 1] += p * vv[f].y;
            o[r][4 * f + 2] += p * vv[f].z, o[r][4 * f + 3] += p * vv[f].w;
          }
        }
      }
      __syncthreads();  // kv and p are rewritten by the next tile
    }
#pragma unroll
    for (int r = 0; r < RY; ++r) {
      const int qr = RY * oy + r;
      if (!mine(qr)) continue;
      const float inv = 1.0f / ls[qr];
      float* out = a.out + (int64_t(row_of(qr)) * a.nh + kvh * G + qr % G) * D;
#pragma unroll
      for (int f = 0; f < VF; ++f)
        *reinterpret_cast<float4*>(out + 4 * (ox + XT * f)) =
            make_float4(o[r][4 * f] * inv, o[r][4 * f + 1] * inv, o[r][4 * f + 2] * inv, o[r][4 * f + 3] * inv);
    }
  }
}

}  // namespace

void launch_attention_prep(const Launch& l, const AttentionPrepArgs& a) {
  if (a.T == 0) return;
  with_lanes(l.lanes, [&](auto lanes) {
    with_elem_type(a.q_norm_type, [&](auto e) {
      using N = decltype(e);
      if (a.k_norm_type != a.q_norm_type)
        fail_call("attention_prep", __FILE__, __LINE__, "q_norm and k_norm must share a dtype");
      launch_overlapping(l, attention_prep_kernel<decltype(lanes)::value, N>, dim3(a.T, a.nh + a.nkv), kPrepThreads,
                         size_t(a.d) * sizeof(float), a, static_cast<const N*>(a.q_norm),
                         static_cast<const N*>(a.k_norm));
    });
  });
  GPU_CHECK_LAUNCH();
}

void launch_kv_cache_write(const Launch& l, const float* k, const float* v, const int32_t* slot_mapping, void* k_cache,
                           void* v_cache, float* k_scale, float* v_scale, DType cache_type, int64_t T, int nkv, int d) {
  if (T == 0) return;
  if (cache_type == DType::I8) {
    with_lanes(l.lanes, [&](auto lanes) {
      constexpr int Lanes = decltype(lanes)::value;
      launch_overlapping(l, kv_write_int8_kernel<Lanes>, dim3(unsigned(T), unsigned(nkv), 2), Lanes, 0, k, v,
                         slot_mapping, static_cast<int8_t*>(k_cache), static_cast<int8_t*>(v_cache), k_scale, v_scale,
                         nkv, d);
    });
  } else {
    with_elem_type(cache_type, [&](auto e) {
      using E = decltype(e);
      launch_overlapping(l, kv_write_kernel<E>, unsigned(T), 256, 0, k, v, slot_mapping, static_cast<E*>(k_cache),
                         static_cast<E*>(v_cache), int64_t(nkv) * d);
    });
  }
  GPU_CHECK_LAUNCH();
}

void launch_paged_attention(const Launch& l, const PagedAttentionArgs& a, Scratch& scratch) {
  if (a.T == 0) return;
  const int G = a.nh / a.nkv;
  // Many rows per sequence (prefill, chunked prefill): the tiled kernel, K/V shared by bq rows.
  if (a.T >= kPrefillMinRows && a.T >= kPrefillRowsPerSeq * a.num_seqs && a.max_seq_rows > kDecodeMaxRows && G <= 32 &&
      (a.d == 64 || a.d == 128 || a.d == 256)) {
    if (tensor_core_prefill_fits(l, a)) {
      launch_tensor_core_prefill(l, a);
      return;
    }
    // 64 x 32 tiles on NVIDIA (f32 caches: 109 KiB of shared memory at d = 256, two blocks per SM);
    // 32 x 16 on wave64 (gfx906 has 64 KiB of LDS per block), also run on NVIDIA in its wave64
    // verification mode.
    with_cache_type(a.cache_type, [&](auto e) {
      auto go = [&](auto d, auto tq, auto tkv) {
        constexpr int D = decltype(d)::value, TQ = decltype(tq)::value, TKV = decltype(tkv)::value;
        auto kernel = prefill_attention_kernel<decltype(e), D, TQ, TKV>;
        const size_t smem = (size_t(TQ + TKV) * (D + 4) + size_t(TKV) * TQ + 3 * TQ) * sizeof(float);
        if (smem > 48 * 1024)
          GPU_CHECK(gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        const int bq = TQ / G;
        launch_overlapping(l, kernel, dim3(a.nkv, blocks_for(a.T, bq)), kAttnThreads, smem, a, bq);
      };
      auto tiles = [&](auto d) {
        using std::integral_constant;
        if constexpr (kNativeLanes == 64) go(d, integral_constant<int, 32>{}, integral_constant<int, 16>{});
        else if (l.lanes == 64) go(d, integral_constant<int, 32>{}, integral_constant<int, 16>{});
        else go(d, integral_constant<int, 64>{}, integral_constant<int, 32>{});
      };
      if (a.d == 64) tiles(std::integral_constant<int, 64>{});
      else if (a.d == 128) tiles(std::integral_constant<int, 128>{});
      else tiles(std::integral_constant<int, 256>{});
    });
    GPU_CHECK_LAUNCH();
    return;
  }
  launch_decode_attention(l, a, scratch);
}

}  // namespace dcu::gpu
