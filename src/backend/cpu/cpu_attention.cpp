// Gated full attention on the CPU: q/k preparation (norm + partial RoPE), paged KV writes, and causal
// GQA attention over the paged cache with an f32 softmax.

#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_ops.h"

namespace dcu::cpu {
namespace {

// In-place zero-centered RMSNorm of one head vector (scale already holds 1 + w).
void norm_head(float* x, const float* scale, int d, float eps) {
  float ss = 0;
  for (int i = 0; i < d; ++i) ss += x[i] * x[i];
  float inv = 1.0f / std::sqrt(ss / float(d) + eps);
  for (int i = 0; i < d; ++i) x[i] = x[i] * inv * scale[i];
}

// theta^(-2i/rotary_dim) for i < rotary_dim / 2, in f32 as transformers computes it.
std::vector<float> inverse_frequencies(const RopeParams& rope) {
  std::vector<float> inv(size_t(rope.rotary_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / std::pow(rope.theta, float(2 * i) / float(rope.rotary_dim));
  return inv;
}

// NeoX rotation of the first rotary_dim dims: pairs (i, i + half), angle pos * inv_freq[i].
void rope_head(float* x, int pos, const std::vector<float>& inv_freq) {
  const int half = int(inv_freq.size());
  for (int i = 0; i < half; ++i) {
    float angle = float(pos) * inv_freq[size_t(i)];
    float c = std::cos(angle), s = std::sin(angle);
    float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

const float* cache_row(const Tensor& cache, int64_t slot, int64_t row_elems) {
  return cache.as<float>() + slot * row_elems;
}

}  // namespace

void attention_prep(const Tensor& qg, Tensor k, const Tensor& q_norm, const Tensor& k_norm, float eps,
                    const RopeParams& rope, const BatchLayout& batch, Tensor q, Tensor gate) {
  const int64_t T = qg.dim(0);
  const int nh = int(qg.dim(1)), d = int(qg.dim(2)) / 2, nkv = int(k.dim(1));
  DCU_CHECK(q.numel() == T * nh * d && gate.numel() == T * nh * d && k.dim(2) == d);
  std::vector<float> qs = to_f32(q_norm), ks = to_f32(k_norm);
  for (float& s : qs) s += 1.0f;
  for (float& s : ks) s += 1.0f;
  const std::vector<float> inv_freq = inverse_frequencies(rope);
  const float* src = qg.as<float>();
#pragma omp parallel for schedule(static) if (T * (nh + nkv) * d >= kParallelWork)
  for (int64_t t = 0; t < T; ++t) {
    const int pos = batch.positions[t];
    for (int h = 0; h < nh; ++h) {
      const float* head = src + (t * nh + h) * 2 * d;
      float* qh = q.as<float>() + (t * nh + h) * d;
      std::memcpy(qh, head, size_t(d) * sizeof(float));
      std::memcpy(gate.as<float>() + (t * nh + h) * d, head + d, size_t(d) * sizeof(float));
      norm_head(qh, qs.data(), d, eps);
      rope_head(qh, pos, inv_freq);
    }
    for (int h = 0; h < nkv; ++h) {
      float* kh = k.as<float>() + (t * nkv + h) * d;
      norm_head(kh, ks.data(), d, eps);
      rope_head(kh, pos, inv_freq);
    }
  }
}

void kv_cache_write(const Tensor& k, const Tensor& v, const BatchLayout& batch, PagedKv& cache) {
  DCU_CHECK(cache.k.dtype == DType::F32 && cache.v.dtype == DType::F32);
  const int64_t T = k.dim(0), row = k.numel() / T;
  for (int64_t t = 0; t < T; ++t) {
    int64_t slot = batch.slot_mapping[t];
    std::memcpy(cache.k.as<float>() + slot * row, k.as<float>() + t * row, size_t(row) * sizeof(float));
    std::memcpy(cache.v.as<float>() + slot * row, v.as<float>() + t * row, size_t(row) * sizeof(float));
  }
}

void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale, Tensor out) {
  const int nh = int(q.dim(1)), d = int(q.dim(2));
  const int nkv = int(cache.k.dim(2)), bs = cache.block_size;
  const int group = nh / nkv;
  const int64_t kv_row = int64_t(nkv) * d;
  const BatchHost& host = *batch.host;
  const int T = batch.num_tokens();
  // Sequence of each packed row, so the parallel loop can run over (token, head).
  std::vector<int> seq_of_row(static_cast<size_t>(T));
  for (int s = 0; s < batch.num_seqs(); ++s)
    for (int r = host.seq_row_begin[s]; r < host.seq_row_begin[s + 1]; ++r) seq_of_row[size_t(r)] = s;

  int64_t work = 0;
  for (int t = 0; t < T; ++t) work += int64_t(batch.positions[t] + 1) * nh * d;
#pragma omp parallel if (work >= kParallelWork)
  {
    std::vector<float> scores;
#pragma omp for collapse(2) schedule(dynamic, 4)
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < nh; ++h) {
        const int s = seq_of_row[size_t(t)];
        const int pos = batch.positions[t];
        const int32_t* blocks = batch.block_tables + int64_t(s) * batch.max_blocks_per_seq();
        const float* qh = q.as<float>() + (int64_t(t) * nh + h) * d;
        const int kvh = h / group;
        scores.resize(size_t(pos) + 1);
        float max_score = -INFINITY;
        for (int p = 0; p <= pos; ++p) {
          int64_t slot = int64_t(blocks[p / bs]) * bs + p % bs;
          const float* kp = cache_row(cache.k, slot, kv_row) + kvh * d;
          float dot = 0;
          for (int i = 0; i < d; ++i) dot += qh[i] * kp[i];
          scores[size_t(p)] = dot * scale;
          max_score = std::max(max_score, scores[size_t(p)]);
        }
        float denom = 0;
        for (int p = 0; p <= pos; ++p) denom += scores[size_t(p)] = std::exp(scores[size_t(p)] - max_score);
        float* oh = out.as<float>() + (int64_t(t) * nh + h) * d;
        std::fill(oh, oh + d, 0.0f);
        for (int p = 0; p <= pos; ++p) {
          int64_t slot = int64_t(blocks[p / bs]) * bs + p % bs;
          const float* vp = cache_row(cache.v, slot, kv_row) + kvh * d;
          const float w = scores[size_t(p)] / denom;
          for (int i = 0; i < d; ++i) oh[i] += w * vp[i];
        }
      }
    }
  }
}

}  // namespace dcu::cpu
