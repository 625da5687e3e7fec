// Gated DeltaNet on the CPU: causal depthwise conv with state, the decay/write gates, and the delta rule
// in its two exact forms: recurrent (one token) and chunked (research/qwen35-spec.md §5.6, chunks of 64).

#include <algorithm>
#include <cstring>
#include <functional>

#include "backend/cpu/cpu_ops.h"

namespace dcu::cpu {
namespace {

constexpr int kChunk = 64;

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void l2_normalize(float* x, int n, float scale) {
  float ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  float inv = scale / std::sqrt(ss + 1e-6f);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// The rows of one (sequence, value head) pair, preprocessed: q, k normalized; f32 copies.
struct HeadRows {
  int n = 0, dk = 0, dv = 0;
  std::vector<float> q, k, v, g, beta;  // [n, dk], [n, dk], [n, dv], [n], [n]
};

// S [dk, dv] <- recurrent rule over all rows; o [n, dv]. after_row(t), when given, runs once S holds the
// state after row t.
void delta_rule_recurrent(const HeadRows& h, float* S, float* o, const std::function<void(int)>& after_row = {}) {
  const int dk = h.dk, dv = h.dv;
  std::vector<float> mem(size_t(dv), 0.0f);
  for (int t = 0; t < h.n; ++t) {
    const float* k = &h.k[size_t(t) * dk];
    const float* q = &h.q[size_t(t) * dk];
    const float* v = &h.v[size_t(t) * dv];
    const float decay = std::exp(h.g[size_t(t)]);
    std::fill(mem.begin(), mem.end(), 0.0f);
    for (int r = 0; r < dk; ++r) {
      float* Sr = S + size_t(r) * dv;
      for (int c = 0; c < dv; ++c) {
        Sr[c] *= decay;
        mem[size_t(c)] += Sr[c] * k[r];
      }
    }
    for (int c = 0; c < dv; ++c) mem[size_t(c)] = h.beta[size_t(t)] * (v[c] - mem[size_t(c)]);  // delta
    float* out = o + size_t(t) * dv;
    std::fill(out, out + dv, 0.0f);
    for (int r = 0; r < dk; ++r) {
      float* Sr = S + size_t(r) * dv;
      for (int c = 0; c < dv; ++c) {
        Sr[c] += k[r] * mem[size_t(c)];
        out[c] += Sr[c] * q[r];
      }
    }
    if (after_row) after_row(t);
  }
}

// The same result as delta_rule_recurrent, chunk by chunk (exact up to rounding).
void delta_rule_chunked(const HeadRows& h, float* S, float* o) {
  const int dk = h.dk, dv = h.dv;
  std::vector<float> gam(kChunk), A(size_t(kChunk) * kChunk), U(size_t(kChunk) * dv), W(size_t(kChunk) * dk);
  for (int c0 = 0; c0 < h.n; c0 += kChunk) {
    const int n = std::min(kChunk, h.n - c0);
    const float* Q = &h.q[size_t(c0) * dk];
    const float* K = &h.k[size_t(c0) * dk];
    const float* V = &h.v[size_t(c0) * dv];
    const float* beta = &h.beta[size_t(c0)];
    float acc = 0;
    for (int i = 0; i < n; ++i) gam[size_t(i)] = acc += h.g[size_t(c0 + i)];
    // A[i, j] = beta_i (k_i . k_j) exp(gam_i - gam_j), j < i; forward substitution for U and W.
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j)
        A[size_t(i) * kChunk + j] = beta[i] * dot(K + size_t(i) * dk, K + size_t(j) * dk, dk) *
                                    std::exp(gam[size_t(i)] - gam[size_t(j)]);
      float* Ui = &U[size_t(i) * dv];
      float* Wi = &W[size_t(i) * dk];
      const float wscale = beta[i] * std::exp(gam[size_t(i)]);
      for (int c = 0; c < dv; ++c) Ui[c] = beta[i] * V[size_t(i) * dv + c];
      for (int r = 0; r < dk; ++r) Wi[r] = wscale * K[size_t(i) * dk + r];
      for (int j = 0; j < i; ++j) {
        const float a = A[size_t(i) * kChunk + j];
        for (int c = 0; c < dv; ++c) Ui[c] -= a * U[size_t(j) * dv + c];
        for (int r = 0; r < dk; ++r) Wi[r] -= a * W[size_t(j) * dk + r];
      }
    }
    // V' = U - W S  (stored in U)
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < dk; ++r) {
        const float w = W[size_t(i) * dk + r];
        const float* Sr = S + size_t(r) * dv;
        for (int c = 0; c < dv; ++c) U[size_t(i) * dv + c] -= w * Sr[c];
      }
    // O_i = exp(gam_i) q_i S + sum_{j <= i} exp(gam_i - gam_j) (q_i . k_j) V'_j
    for (int i = 0; i < n; ++i) {
      float* out = o + size_t(c0 + i) * dv;
      std::fill(out, out + dv, 0.0f);
      const float* qi = Q + size_t(i) * dk;
      const float ei = std::exp(gam[size_t(i)]);
      for (int r = 0; r < dk; ++r) {
        const float qr = qi[r] * ei;
        const float* Sr = S + size_t(r) * dv;
        for (int c = 0; c < dv; ++c) out[c] += qr * Sr[c];
      }
      for (int j = 0; j <= i; ++j) {
        const float w = dot(qi, K + size_t(j) * dk, dk) * std::exp(gam[size_t(i)] - gam[size_t(j)]);
        for (int c = 0; c < dv; ++c) out[c] += w * U[size_t(j) * dv + c];
      }
    }
    // S <- exp(gam_last) S + sum_i exp(gam_last - gam_i) k_i (x) V'_i
    const float last = gam[size_t(n - 1)];
    const float total_decay = std::exp(last);
    for (int r = 0; r < dk; ++r) {
      float* Sr = S + size_t(r) * dv;
      for (int c = 0; c < dv; ++c) Sr[c] *= total_decay;
      for (int i = 0; i < n; ++i) {
        const float kr = K[size_t(i) * dk + r] * std::exp(last - gam[size_t(i)]);
        for (int c = 0; c < dv; ++c) Sr[c] += kr * U[size_t(i) * dv + c];
      }
    }
  }
}

}  // namespace

void gdn_conv(const Tensor& mixed, const Tensor& weight, GdnState& state, const BatchLayout& batch, Tensor out) {
  const int64_t C = mixed.cols();
  const int Kc = int(weight.numel() / C);
  const int W = Kc - 1;
  DCU_CHECK(state.conv.dtype == DType::F32 && state.conv.numel() / state.conv.dim(0) == C * W);
  std::vector<float> w = to_f32(weight);  // [C, Kc]
  const float* x = mixed.as<float>();
  float* y = out.as<float>();
  const BatchHost& host = *batch.host;
  auto slot_state = [&](int slot) { return state.conv.as<float>() + int64_t(slot) * C * W; };
  DCU_CHECK(W <= 16);
  for (int s = 0; s < batch.num_seqs(); ++s) {
    const int r0 = host.seq_row_begin[s], r1 = host.seq_row_begin[s + 1];
    const float* conv_state = slot_state(host.state_slots[s]);
    const bool fresh = host.seq_context_before[s] == 0;
#pragma omp parallel for schedule(static) if (int64_t(r1 - r0) * C * Kc >= kParallelWork)
    for (int64_t c = 0; c < C; ++c) {
      float window[16];  // the last W inputs, oldest first: the state after the row just walked
      for (int j = 0; j < W; ++j) window[j] = fresh ? 0.0f : conv_state[c * W + j];
      const float* wc = &w[size_t(c * Kc)];
      for (int r = r0; r < r1; ++r) {
        const float xin = x[int64_t(r) * C + c];
        float acc = wc[W] * xin;
        for (int j = 0; j < W; ++j) acc += wc[j] * window[j];
        y[int64_t(r) * C + c] = silu(acc);
        for (int j = 0; j + 1 < W; ++j) window[j] = window[j + 1];
        if (W > 0) window[W - 1] = xin;
        if (const int slot = host.state_write_slots[size_t(r)]; slot >= 0)
          for (int j = 0; j < W; ++j) slot_state(slot)[c * W + j] = window[j];
      }
    }
  }
}

void gdn_gates(const Tensor& a, const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor g, Tensor beta) {
  const int64_t T = a.rows(), Hv = a.cols();
  std::vector<float> alog = to_f32(A_log), bias = to_f32(dt_bias);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < Hv; ++j) {
      const int64_t i = t * Hv + j;
      g.as<float>()[i] = -std::exp(alog[size_t(j)]) * softplus(a.as<float>()[i] + bias[size_t(j)]);
      beta.as<float>()[i] = sigmoid(b.as<float>()[i]);
    }
}

void gdn_delta_rule(const Tensor& qkv, const Tensor& g, const Tensor& beta, const GdnDims& dims, GdnState& state,
                    const BatchLayout& batch, Tensor out) {
  const int Hk = dims.num_key_heads, Hv = dims.num_value_heads, dk = dims.key_dim, dv = dims.value_dim;
  const int64_t C = dims.conv_channels();
  DCU_CHECK(qkv.cols() == C && state.recurrent.dtype == DType::F32);
  const int ratio = Hv / Hk;
  const float q_scale = 1.0f / std::sqrt(float(dk));
  const BatchHost& host = *batch.host;
  const int S = batch.num_seqs();
  const float* u = qkv.as<float>();

#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (int64_t(batch.num_tokens()) * Hv * dk * dv >= kParallelWork)
  for (int s = 0; s < S; ++s) {
    for (int j = 0; j < Hv; ++j) {
      const int r0 = host.seq_row_begin[s], n = host.seq_row_begin[s + 1] - r0;
      if (n == 0) continue;
      const int kh = j / ratio;
      HeadRows h;
      h.n = n, h.dk = dk, h.dv = dv;
      h.q.resize(size_t(n) * dk), h.k.resize(size_t(n) * dk), h.v.resize(size_t(n) * dv);
      h.g.resize(size_t(n)), h.beta.resize(size_t(n));
      for (int t = 0; t < n; ++t) {
        const float* row = u + int64_t(r0 + t) * C;
        std::memcpy(&h.q[size_t(t) * dk], row + kh * dk, size_t(dk) * 4);
        std::memcpy(&h.k[size_t(t) * dk], row + int64_t(Hk) * dk + kh * dk, size_t(dk) * 4);
        std::memcpy(&h.v[size_t(t) * dv], row + int64_t(2 * Hk) * dk + int64_t(j) * dv, size_t(dv) * 4);
        l2_normalize(&h.q[size_t(t) * dk], dk, q_scale);
        l2_normalize(&h.k[size_t(t) * dk], dk, 1.0f);
        h.g[size_t(t)] = g.as<float>()[int64_t(r0 + t) * Hv + j];
        h.beta[size_t(t)] = beta.as<float>()[int64_t(r0 + t) * Hv + j];
      }
      auto slot_state = [&](int slot) { return state.recurrent.as<float>() + (int64_t(slot) * Hv + j) * dk * dv; };
      const size_t state_size = size_t(dk) * dv;
      std::vector<float> Sj(state_size, 0.0f);
      if (host.seq_context_before[s] != 0) std::copy_n(slot_state(host.state_slots[s]), state_size, Sj.data());
      // Rows that keep their state (verify steps) are walked one by one; otherwise only the last row's counts.
      const int32_t* writes = host.state_write_slots.data() + r0;
      const bool per_row = std::any_of(writes, writes + n - 1, [](int32_t slot) { return slot >= 0; });
      std::vector<float> o(size_t(n) * dv);
      if (n == 1 || per_row)
        delta_rule_recurrent(h, Sj.data(), o.data(), [&](int t) {
          if (writes[t] >= 0) std::copy_n(Sj.data(), state_size, slot_state(writes[t]));
        });
      else {
        delta_rule_chunked(h, Sj.data(), o.data());
        if (writes[n - 1] >= 0) std::copy_n(Sj.data(), state_size, slot_state(writes[n - 1]));
      }
      for (int t = 0; t < n; ++t)
        std::memcpy(out.as<float>() + (int64_t(r0 + t) * Hv + j) * dv, &o[size_t(t) * dv], size_t(dv) * 4);
    }
  }
}

}  // namespace dcu::cpu
