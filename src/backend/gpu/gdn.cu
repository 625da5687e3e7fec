// Gated DeltaNet: causal depthwise conv with state, the decay/write gates, and the delta rule.
//
// delta rule: every column c of a value head's state S [dk, dv] evolves on its own (given the token's
// k, q, beta, g and v[c]), so a group of kDeltaGroup lanes owns one column and keeps it in registers,
// each lane holding R rows (dk <= R * kDeltaGroup). Per token: decay, mem = S^T k (group sum),
// S += k (beta (v - mem)), o = S^T q (group sum). The tokens of a sequence are walked inside one
// launch (prefill); the state is read once and written after each row that keeps it (the last row; every
// row of a speculative verify step, BatchHost::state_write_slots).
// Decode steps (one token per sequence) use a second layout: lanes run along the columns, so every
// state row is read and written as whole coalesced lines (the column-per-group layout touches one
// 4-byte word per 32-byte sector per lane), and the block's logical warps split the rows, reducing
// S^T k and S^T q through shared memory.

#include <cmath>

#include "backend/gpu/kernels.h"

namespace dcu::gpu {
namespace {

constexpr int kConvThreads = 128;
constexpr int kMaxConvTaps = 8;
constexpr int kConvRows = 16;  // rows of a sequence per thread (at least kMaxConvTaps)
constexpr int kDeltaThreads = 256;      // decode: threads per block
constexpr int kDeltaChunk = 8;          // prefill: tokens staged in shared memory at a time
constexpr int kDeltaGroup = 4;          // prefill: lanes per state column
constexpr int kDeltaWalkThreads = 128;  // prefill: threads per block (32 columns)

// grid (ceil(C / kConvThreads), S, ceil(rows / kConvRows)); a thread takes one channel's rows
// kConvRows z .. + kConvRows - 1 of sequence y, its window read from the rows before them (or from the
// state, or zeros for a fresh sequence). Only the sequence's first chunk reads the state, and it
// writes the new one into the slot it read (the sequence's last taps inputs), so no thread reads a
// state another writes; rows that keep their state in other slots (verify steps) write their window
// as they are walked.
template <typename W>
__global__ void conv_kernel(const float* mixed, const W* weight, float* conv_state, GdnBatch b, float* out, int64_t C,
                            int Kc) {
  start_after_previous_kernel();
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int s = blockIdx.y;
  const int begin = b.seq_row_begin[s], end = b.seq_row_begin[s + 1], first = begin + int(blockIdx.z) * kConvRows;
  if (c >= C || first >= end) return;
  const int taps = Kc - 1;
  const int read_slot = b.state_slots[s];
  float* st = conv_state + (int64_t(read_slot) * C + c) * taps;
  const bool fresh = b.seq_context_before[s] == 0;
  // The input at sequence row r; rows before the sequence are the state's entries (oldest first).
  auto input = [&](int r) { return r >= begin ? mixed[int64_t(r) * C + c] : fresh ? 0.0f : st[taps - (begin - r)]; };
  float window[kMaxConvTaps];
  float w[kMaxConvTaps + 1];
#pragma unroll
  for (int j = 0; j < kMaxConvTaps; ++j) window[j] = j < taps ? input(first - taps + j) : 0.0f;
#pragma unroll
  for (int j = 0; j <= kMaxConvTaps; ++j) w[j] = j < Kc ? to_f32(weight[c * Kc + j]) : 0.0f;
  const int last = min(end, first + kConvRows);
#pragma unroll
  for (int i = 0; i < kConvRows; ++i) {
    const int r = first + i;
    if (r >= last) break;
    const float xin = mixed[int64_t(r) * C + c];
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxConvTaps; ++j)
      if (j < taps) acc += w[j] * window[j];
    acc = w[taps] * xin + acc;
    out[int64_t(r) * C + c] = acc / (1.0f + expf(-acc));
#pragma unroll
    for (int j = 0; j + 1 < kMaxConvTaps; ++j)
      if (j + 1 < taps) window[j] = window[j + 1];
#pragma unroll
    for (int j = 0; j < kMaxConvTaps; ++j)
      if (j == taps - 1) window[j] = xin;
    if (const int slot = b.state_write_slots[r]; slot >= 0 && slot != read_slot) {
      float* kept = conv_state + (int64_t(slot) * C + c) * taps;
#pragma unroll
      for (int j = 0; j < kMaxConvTaps; ++j)
        if (j < taps) kept[j] = window[j];
    }
  }
  if (blockIdx.z != 0 || b.state_write_slots[end - 1] != read_slot) return;
  float next[kMaxConvTaps];  // all read before any is written (short sequences keep old entries)
#pragma unroll
  for (int j = 0; j < kMaxConvTaps; ++j) next[j] = j < taps ? input(end - taps + j) : 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxConvTaps; ++j)
    if (j < taps) st[j] = next[j];
}

template <typename A, typename D>
__global__ void gates_kernel(const float* a, const float* b, const A* A_log, const D* dt_bias, float* g, float* beta,
                             int64_t n, int Hv) {
  start_after_previous_kernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int j = int(i % Hv);
    const float x = a[i] + to_f32(dt_bias[j]);
    const float softplus = x > 20.0f ? x : log1pf(expf(x));
    g[i] = -expf(to_f32(A_log[j])) * softplus;
    beta[i] = 1.0f / (1.0f + expf(-b[i]));
  }
}

// grid (ceil(dv / W), Hv, S), block Threads: W = Threads / Group columns, Group lanes each. A
// column's state stays in registers for the whole token walk, lane l holding rows 4 (l + Group v) ..
// + 3 (R rows, read from the stage as float4s). Small groups keep the per-token reductions short
// (log2 Group shuffles) and the grid within one wave of blocks: the walk is sequential, so a second
// wave would double the time. Tokens are staged kDeltaChunk at a time in shared memory (q, k, their
// inverse norms, decay, beta, each column's v): the next chunk's loads are issued before the current
// chunk is walked and land in the other buffer after it, so the global latency is hidden behind
// kDeltaChunk tokens of work, and within a chunk the columns need no barrier.
template <int Group, int Threads, int R>
__global__ void __launch_bounds__(Threads) delta_rule_kernel(DeltaRuleArgs a, GdnBatch b) {
  start_after_previous_kernel();
  constexpr int W = Threads / Group, V = R / 4;  // columns per block, float4s per lane
  constexpr int NP = (2 * R * Group * kDeltaChunk + Threads - 1) / Threads;  // staged q, k values per thread
  constexpr int NV = (kDeltaChunk * W + Threads - 1) / Threads;             // staged v values per thread
  // The norms take (token, q or k) pairs by column group; a warp's groups must agree on the count.
  static_assert(R % 4 == 0 && (2 * kDeltaChunk) % (WARP_SIZE / Group) == 0);
  DYNAMIC_SHARED(float4, qk4);               // [2][kDeltaChunk][2 dk]: per token q | k
  float* qk = reinterpret_cast<float*>(qk4);
  __shared__ float gates[2][kDeltaChunk][2];  // exp(g), beta
  __shared__ float inv[2][kDeltaChunk][2];    // dk^-0.5 / |q|, 1 / |k|
  __shared__ float vs[2][kDeltaChunk][W];     // v at each column
  const int dk = a.dk, dv = a.dv, Hv = a.Hv;
  const int64_t C = 2 * int64_t(a.Hk) * dk + int64_t(Hv) * dv;
  const int j = blockIdx.y, s = blockIdx.z, kh = j / (Hv / a.Hk);
  const int column = threadIdx.x / Group, lane = threadIdx.x % Group;
  const int c = blockIdx.x * W + column;
  const bool active = c < dv;  // inactive columns walk zeros (their lanes take part in the shuffles)
  float* S = a.state + (int64_t(b.state_slots[s]) * Hv + j) * dk * dv;
  const bool fresh = b.seq_context_before[s] == 0;
  auto row_of = [&](int v, int e) { return 4 * (lane + Group * v) + e; };
  float st[R];  // st[4 v + e]: row row_of(v, e)
#pragma unroll
  for (int v = 0; v < V; ++v)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row_of(v, e);
      st[4 * v + e] = (active && r < dk && !fresh) ? S[int64_t(r) * dv + c] : 0.0f;
    }
  const int row_begin = b.seq_row_begin[s], row_end = b.seq_row_begin[s + 1];
  const int tid = threadIdx.x, span = 2 * dk;  // staged floats per token
  float next_qk[NP], next_gate = 0.0f, next_v[NV];
  // Loads the chunk of rows first.. into registers (rows past the sequence read as zeros).
  auto fetch = [&](int first) {
#pragma unroll
    for (int n = 0; n < NP; ++n) {
      const int i = tid + n * Threads, token = i / span, e = i % span, row = first + token;
      // q_e for e < dk, k_{e - dk} after; the k head starts Hk * dk after the q head
      const float* u = a.qkv + int64_t(row) * C + int64_t(kh) * dk;
      next_qk[n] = token < kDeltaChunk && row < row_end ? (e < dk ? u[e] : u[int64_t(a.Hk) * dk + e - dk]) : 0.0f;
    }
    if (tid < 2 * kDeltaChunk) {
      const int row = first + tid / 2;
      next_gate = row < row_end ? (tid % 2 == 0 ? a.g : a.beta)[int64_t(row) * Hv + j] : 0.0f;
    }
#pragma unroll
    for (int n = 0; n < NV; ++n) {
      const int i = tid + n * Threads, row = first + i / W, col = blockIdx.x * W + i % W;
      const int64_t at = int64_t(row) * C + 2 * int64_t(a.Hk) * dk + int64_t(j) * dv + col;
      next_v[n] = i < kDeltaChunk * W && row < row_end && col < dv ? a.qkv[at] : 0.0f;
    }
  };
  // Writes the fetched chunk into buffer buf, then (after a barrier) its q and k norms, one (token,
  // q or k) pair per column group.
  auto stash = [&](int buf) {
    float* base = qk + buf * kDeltaChunk * span;
#pragma unroll
    for (int n = 0; n < NP; ++n) {
      const int i = tid + n * Threads;
      if (i < kDeltaChunk * span) base[i] = next_qk[n];
    }
    if (tid < 2 * kDeltaChunk) gates[buf][tid / 2][tid % 2] = tid % 2 == 0 ? expf(next_gate) : next_gate;
#pragma unroll
    for (int n = 0; n < NV; ++n) {
      const int i = tid + n * Threads;
      if (i < kDeltaChunk * W) vs[buf][i / W][i % W] = next_v[n];
    }
    __syncthreads();
    for (int p = column; p < 2 * kDeltaChunk; p += W) {
      const float* x = base + (p / 2) * span + (p % 2) * dk;
      float ss = 0.0f;
      for (int i = lane; i < dk; i += Group) ss += x[i] * x[i];
      ss = warp_sum<Group>(ss);
      if (lane == 0) inv[buf][p / 2][p % 2] = (p % 2 == 0 ? 1.0f / sqrtf(float(dk)) : 1.0f) / sqrtf(ss + 1e-6f);
    }
  };
  if (row_begin < row_end) {
    fetch(row_begin);
    stash(0);
  }
  __syncthreads();
  for (int first = row_begin, buf = 0; first < row_end; first += kDeltaChunk, buf ^= 1) {
    const bool more = first + kDeltaChunk < row_end;
    if (more) fetch(first + kDeltaChunk);
    const int tokens = min(kDeltaChunk, row_end - first);
    for (int t = 0; t < tokens; ++t) {
      const float4* q = qk4 + (buf * kDeltaChunk + t) * (span / 4);
      const float4* k = q + dk / 4;
      const float decay = gates[buf][t][0], bt = gates[buf][t][1], q_inv = inv[buf][t][0], k_inv = inv[buf][t][1];
      float4 kv[V];
      float mem[4] = {};  // four independent sums: short dependency chains
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const bool in = row_of(v, 0) < dk;
        kv[v] = in ? k[lane + Group * v] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float* x = st + 4 * v;
        x[0] *= decay, x[1] *= decay, x[2] *= decay, x[3] *= decay;
        mem[0] += x[0] * kv[v].x, mem[1] += x[1] * kv[v].y, mem[2] += x[2] * kv[v].z, mem[3] += x[3] * kv[v].w;
      }
      const float k_mem = warp_sum<Group>((mem[0] + mem[1]) + (mem[2] + mem[3])) * k_inv;  // (S^T k)_c / |k|
      const float kd = bt * (vs[buf][t][column] - k_mem) * k_inv;
      float o[4] = {};
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const bool in = row_of(v, 0) < dk;
        const float4 qv = in ? q[lane + Group * v] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float* x = st + 4 * v;
        x[0] += kv[v].x * kd, x[1] += kv[v].y * kd, x[2] += kv[v].z * kd, x[3] += kv[v].w * kd;
        o[0] += x[0] * qv.x, o[1] += x[1] * qv.y, o[2] += x[2] * qv.z, o[3] += x[3] * qv.w;
      }
      const float out = warp_sum<Group>((o[0] + o[1]) + (o[2] + o[3]));
      if (lane == 0 && active) a.out[(int64_t(first + t) * Hv + j) * dv + c] = out * q_inv;
      if (const int slot = b.state_write_slots[first + t]; slot >= 0 && active) {
        float* kept = a.state + (int64_t(slot) * Hv + j) * dk * dv;
#pragma unroll
        for (int v = 0; v < V; ++v)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int r = row_of(v, e);
            if (r < dk) kept[int64_t(r) * dv + c] = st[4 * v + e];
          }
      }
    }
    if (more) stash(buf ^ 1);  // buf ^ 1 was last read before the previous chunk's closing barrier
    __syncthreads();
  }
}

// grid (ceil(dv / Lanes), Hv, S), block kDeltaThreads = G logical warps; one token per sequence.
// Thread (g, lane) holds column c = blockIdx.x * Lanes + lane, rows g, g + G, ... (R of them).
template <int Lanes, int R>
__global__ void __launch_bounds__(kDeltaThreads) delta_rule_decode_kernel(DeltaRuleArgs a, GdnBatch b) {
  start_after_previous_kernel();
  constexpr int G = kDeltaThreads / Lanes;
  DYNAMIC_SHARED(float, qk);  // q [dk] | k [dk]
  __shared__ float mem_part[G][Lanes], out_part[G][Lanes], inv_norm[2];
  const int dk = a.dk, dv = a.dv, Hv = a.Hv;
  const int64_t C = 2 * int64_t(a.Hk) * dk + int64_t(Hv) * dv;
  const int j = blockIdx.y, s = blockIdx.z, kh = j / (Hv / a.Hk);
  const int g = threadIdx.x / Lanes, lane = threadIdx.x % Lanes;
  const int c = blockIdx.x * Lanes + lane;
  const bool active = c < dv;
  const int row = b.seq_row_begin[s];
  if (b.seq_row_begin[s + 1] == row) return;  // no token this step (uniform per block)
  float* S = a.state + (int64_t(b.state_slots[s]) * Hv + j) * dk * dv;
  const bool fresh = b.seq_context_before[s] == 0;
  float st[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int r = g + i * G;
    st[i] = (active && r < dk && !fresh) ? S[int64_t(r) * dv + c] : 0.0f;
  }
  const float* u = a.qkv + int64_t(row) * C;
  // Every global load is issued here, before the first barrier: the state, the gates, v and q | k.
  const float g_log = a.g[int64_t(row) * Hv + j], bt = a.beta[int64_t(row) * Hv + j];
  const float v_c = active ? u[2 * int64_t(a.Hk) * dk + int64_t(j) * dv + c] : 0.0f;
  for (int i = threadIdx.x; i < dk; i += blockDim.x) {
    qk[i] = u[int64_t(kh) * dk + i];
    qk[dk + i] = u[int64_t(a.Hk) * dk + int64_t(kh) * dk + i];
  }
  __syncthreads();
  if (g < 2) {  // logical warp 0: |q|, 1: |k|
    float ss = 0.0f;
    for (int i = lane; i < dk; i += Lanes) ss += qk[g * dk + i] * qk[g * dk + i];
    ss = warp_sum<Lanes>(ss);
    if (lane == 0) inv_norm[g] = (g == 0 ? 1.0f / sqrtf(float(dk)) : 1.0f) / sqrtf(ss + 1e-6f);
  }
  __syncthreads();
  const float q_inv = inv_norm[0], k_inv = inv_norm[1];
  const float decay = expf(g_log);
  float mem = 0.0f;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int r = g + i * G;
    st[i] *= decay;
    if (r < dk) mem += st[i] * qk[dk + r];
  }
  mem_part[g][lane] = mem * k_inv;
  __syncthreads();
  mem = 0.0f;
#pragma unroll
  for (int v = 0; v < G; ++v) mem += mem_part[v][lane];
  const float delta = active ? bt * (v_c - mem) : 0.0f;
  float o = 0.0f;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int r = g + i * G;
    if (r < dk) {
      st[i] += qk[dk + r] * k_inv * delta;
      o += st[i] * qk[r];
    }
  }
  out_part[g][lane] = o * q_inv;
  __syncthreads();
  if (!active) return;
  if (g == 0) {
    o = 0.0f;
#pragma unroll
    for (int v = 0; v < G; ++v) o += out_part[v][lane];
    a.out[(int64_t(row) * Hv + j) * dv + c] = o;
  }
  const int slot = b.state_write_slots[row];
  if (slot < 0) return;
  float* kept = a.state + (int64_t(slot) * Hv + j) * dk * dv;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const int r = g + i * G;
    if (r < dk) kept[int64_t(r) * dv + c] = st[i];
  }
}

}  // namespace

void launch_gdn_conv(const Launch& l, const float* mixed, const void* weight, DType weight_type, float* conv_state,
                     const GdnBatch& b, float* out, int64_t C, int Kc) {
  if (b.num_seqs == 0) return;
  if (Kc < 1 || Kc > kMaxConvTaps + 1) fail_call("gdn_conv", __FILE__, __LINE__, "conv kernel width must be 1..9");
  with_elem_type(weight_type, [&](auto e) {
    using W = decltype(e);
    const dim3 grid(blocks_for(C, kConvThreads), b.num_seqs, std::max(1u, blocks_for(b.max_rows_per_seq, kConvRows)));
    launch_overlapping(l, conv_kernel<W>, grid, kConvThreads, 0, mixed,
                       static_cast<const W*>(weight), conv_state, b, out, C, Kc);
  });
  GPU_CHECK_LAUNCH();
}

void launch_gdn_gates(const Launch& l, const float* a, const float* b, const void* A_log, DType A_log_type,
                      const void* dt_bias, DType dt_bias_type, float* g, float* beta, int64_t T, int Hv) {
  const int64_t n = T * Hv;
  if (n == 0) return;
  with_elem_type(A_log_type, [&](auto ea) {
    with_elem_type(dt_bias_type, [&](auto ed) {
      using A = decltype(ea);
      using D = decltype(ed);
      launch_overlapping(l, gates_kernel<A, D>, unsigned(std::min<int64_t>(blocks_for(n, 256), 4096)), 256, 0, a, b,
                         static_cast<const A*>(A_log), static_cast<const D*>(dt_bias), g, beta, n, Hv);
    });
  });
  GPU_CHECK_LAUNCH();
}

void launch_gdn_delta_rule(const Launch& l, const DeltaRuleArgs& a, const GdnBatch& b) {
  if (b.num_seqs == 0) return;
  if (a.Hv % a.Hk != 0) fail_call("gdn_delta_rule", __FILE__, __LINE__, "Hv must be a multiple of Hk");
  const size_t head_qk = 2 * size_t(a.dk) * sizeof(float);  // one token's q | k
  if (b.max_rows_per_seq == 1 && a.dk <= 64 * (kDeltaThreads / l.lanes)) {
    with_lanes(l.lanes, [&](auto lanes) {
      constexpr int Lanes = decltype(lanes)::value;
      constexpr int G = kDeltaThreads / Lanes;
      const dim3 grid(blocks_for(a.dv, Lanes), a.Hv, b.num_seqs);
      auto go = [&](auto r) {
        launch_overlapping(l, delta_rule_decode_kernel<Lanes, decltype(r)::value>, grid, kDeltaThreads, head_qk, a, b);
      };
      if (a.dk <= 16 * G) go(std::integral_constant<int, 16>{});
      else if (a.dk <= 32 * G) go(std::integral_constant<int, 32>{});
      else go(std::integral_constant<int, 64>{});
    });
  } else {
    if (a.dk % 4 != 0 || a.dk > 32 * kDeltaGroup)
      fail_call("gdn_delta_rule", __FILE__, __LINE__, "key head dim must be a multiple of 4, at most 128");
    const dim3 grid(blocks_for(a.dv, kDeltaWalkThreads / kDeltaGroup), a.Hv, b.num_seqs);
    auto go = [&](auto r) {
      auto kernel = delta_rule_kernel<kDeltaGroup, kDeltaWalkThreads, decltype(r)::value>;
      launch_overlapping(l, kernel, grid, kDeltaWalkThreads, 2 * kDeltaChunk * head_qk, a, b);
    };
    if (a.dk <= 4 * kDeltaGroup) go(std::integral_constant<int, 4>{});
    else if (a.dk <= 8 * kDeltaGroup) go(std::integral_constant<int, 8>{});
    else if (a.dk <= 16 * kDeltaGroup) go(std::integral_constant<int, 16>{});
    else go(std::integral_constant<int, 32>{});
  }
  GPU_CHECK_LAUNCH();
}

}  // namespace dcu::gpu
