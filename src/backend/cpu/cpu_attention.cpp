// Gated full attention on the CPU: q/k preparation (norm + partial RoPE), paged KV writes, and causal
// GQA attention over the paged cache with an f32 softmax.

#include <algorithm>
#include <cmath>
#include <cstring>

#include <immintrin.h>

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

// One head's row [d] into the 8-bit cache: codes round(x / scale), scale = max |x| / 127 (0 for a zero row).
void quantize_row(const float* x, int d, int8_t* codes, float* scale) {
  float amax = 0.0f;
  for (int i = 0; i < d; ++i) amax = std::max(amax, std::fabs(x[i]));
  *scale = amax / 127.0f;
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int i = 0; i < d; ++i) codes[i] = int8_t(std::lrint(std::clamp(x[i] * inv, -127.0f, 127.0f)));
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
  const int64_t T = k.dim(0), row = k.numel() / T;
  if (cache.k.dtype == DType::I8) {
    DCU_CHECK(cache.v.dtype == DType::I8 && cache.k_scale.numel() * cache.k.dim(3) == cache.k.numel());
    const int nkv = int(cache.k.dim(2)), d = int(cache.k.dim(3));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t slot = batch.slot_mapping[t];
      for (int h = 0; h < nkv; ++h) {
        quantize_row(k.as<float>() + t * row + h * d, d, cache.k.as<int8_t>() + slot * row + h * d,
                     cache.k_scale.as<float>() + slot * nkv + h);
        quantize_row(v.as<float>() + t * row + h * d, d, cache.v.as<int8_t>() + slot * row + h * d,
                     cache.v_scale.as<float>() + slot * nkv + h);
      }
    }
    return;
  }
  DCU_CHECK(cache.k.dtype == DType::F32 && cache.v.dtype == DType::F32);
  for (int64_t t = 0; t < T; ++t) {
    int64_t slot = batch.slot_mapping[t];
    std::memcpy(cache.k.as<float>() + slot * row, k.as<float>() + t * row, size_t(row) * sizeof(float));
    std::memcpy(cache.v.as<float>() + slot * row, v.as<float>() + t * row, size_t(row) * sizeof(float));
  }
}

namespace {

// Work tiles of the causal attention: a block of K and V rows is read from memory once per tile of
// kQueryTile rows (times the q heads sharing the kv head) instead of once per row and head, which is
// what keeps long prompts from becoming memory-bound.
constexpr int kQueryTile = 16;
constexpr int kKeyBlock = 64;

#if defined(__AVX2__) && defined(__FMA__)
float dot(const float* a, const float* b, int d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= d; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  __m256 v = _mm256_add_ps(s0, s1);
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_hadd_ps(h, h);
  h = _mm_hadd_ps(h, h);
  float sum = _mm_cvtss_f32(h);
  for (; i < d; ++i) sum += a[i] * b[i];
  return sum;
}
// y = y * c + w * x
void scale_add(float* y, float c, float w, const float* x, int d) {
  const __m256 cv = _mm256_set1_ps(c), wv = _mm256_set1_ps(w);
  int i = 0;
  for (; i + 8 <= d; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i), _mm256_mul_ps(cv, _mm256_loadu_ps(y + i))));
  for (; i < d; ++i) y[i] = y[i] * c + w * x[i];
}
#else
float dot(const float* a, const float* b, int d) {
  float lanes[8] = {};
  int i = 0;
  for (; i + 8 <= d; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += a[i + j] * b[i + j];
  float sum = 0;
  for (float l : lanes) sum += l;
  for (; i < d; ++i) sum += a[i] * b[i];
  return sum;
}
void scale_add(float* y, float c, float w, const float* x, int d) {
  for (int i = 0; i < d; ++i) y[i] = y[i] * c + w * x[i];
}
#endif

struct AttentionTile {
  int seq, kv_head, row_begin, row_end;
};

// One query vector's online softmax: running max, running sum, unnormalised output [d].
struct OnlineSoftmax {
  float max = -INFINITY, sum = 0;
  float* acc = nullptr;
};

}  // namespace

void paged_attention(const Tensor& q, const PagedKv& cache, const BatchLayout& batch, float scale, Tensor out) {
  const int nh = int(q.dim(1)), d = int(q.dim(2));
  const int nkv = int(cache.k.dim(2)), bs = cache.block_size;
  const int group = nh / nkv;
  const int64_t kv_row = int64_t(nkv) * d;
  const BatchHost& host = *batch.host;
  const bool int8 = cache.k.dtype == DType::I8;
  DCU_CHECK(int8 || cache.k.dtype == DType::F32);

  std::vector<AttentionTile> tiles;
  int64_t work = 0;
  for (int s = 0; s < batch.num_seqs(); ++s)
    for (int r = host.seq_row_begin[s]; r < host.seq_row_begin[s + 1]; r += kQueryTile)
      for (int g = 0; g < nkv; ++g)
        tiles.push_back({s, g, r, std::min(r + kQueryTile, host.seq_row_begin[s + 1])});
  for (int t = 0; t < batch.num_tokens(); ++t) work += int64_t(batch.positions[t] + 1) * nh * d;

#pragma omp parallel if (work >= kParallelWork)
  {
    std::vector<float> acc(size_t(kQueryTile) * group * d), scores(kKeyBlock);
    std::vector<OnlineSoftmax> states(size_t(kQueryTile) * group);
    const float* keys[kKeyBlock];
    const float* values[kKeyBlock];
    std::vector<float> decoded(int8 ? size_t(2) * kKeyBlock * d : 0);  // an 8-bit cache's block, K then V
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < tiles.size(); ++i) {
      const AttentionTile tile = tiles[i];
      const int32_t* blocks = batch.block_tables + int64_t(tile.seq) * batch.max_blocks_per_seq();
      const int rows = tile.row_end - tile.row_begin;
      int last_position = 0;
      for (int r = tile.row_begin; r < tile.row_end; ++r) last_position = std::max(last_position, batch.positions[r]);
      // Query vector j = row (j / group), q head tile.kv_head * group + j % group.
      const int nq = rows * group;
      std::fill(acc.begin(), acc.begin() + int64_t(nq) * d, 0.0f);
      for (int j = 0; j < nq; ++j) states[size_t(j)] = {-INFINITY, 0.0f, acc.data() + int64_t(j) * d};
      for (int kb = 0; kb <= last_position; kb += kKeyBlock) {
        const int n = std::min(kKeyBlock, last_position + 1 - kb);
        for (int p = 0; p < n; ++p) {
          const int64_t slot = int64_t(blocks[(kb + p) / bs]) * bs + (kb + p) % bs;
          const int64_t at = slot * kv_row + tile.kv_head * d;
          if (!int8) {
            keys[p] = cache.k.as<float>() + at;
            values[p] = cache.v.as<float>() + at;
            continue;
          }
          float* kd = decoded.data() + int64_t(p) * d;
          float* vd = kd + int64_t(kKeyBlock) * d;
          const float ks = cache.k_scale.as<float>()[slot * nkv + tile.kv_head];
          const float vs = cache.v_scale.as<float>()[slot * nkv + tile.kv_head];
          for (int e = 0; e < d; ++e) kd[e] = float(cache.k.as<int8_t>()[at + e]) * ks;
          for (int e = 0; e < d; ++e) vd[e] = float(cache.v.as<int8_t>()[at + e]) * vs;
          keys[p] = kd, values[p] = vd;
        }
        for (int j = 0; j < nq; ++j) {
          const int row = tile.row_begin + j / group;
          const int visible = std::min(n, batch.positions[row] + 1 - kb);  // causal: keys up to its position
          if (visible <= 0) continue;
          const int h = tile.kv_head * group + j % group;
          const float* qh = q.as<float>() + (int64_t(row) * nh + h) * d;
          float block_max = -INFINITY;
          for (int p = 0; p < visible; ++p) block_max = std::max(block_max, scores[size_t(p)] = dot(qh, keys[p], d) * scale);
          OnlineSoftmax& st = states[size_t(j)];
          const float new_max = std::max(st.max, block_max);
          const float rescale = std::exp(st.max - new_max);  // 0 on the first block
          st.sum *= rescale;
          for (int p = 0; p < visible; ++p) {
            const float w = std::exp(scores[size_t(p)] - new_max);
            st.sum += w;
            scale_add(st.acc, p == 0 ? rescale : 1.0f, w, values[p], d);
          }
          st.max = new_max;
        }
      }
      for (int j = 0; j < nq; ++j) {
        const int row = tile.row_begin + j / group, h = tile.kv_head * group + j % group;
        float* oh = out.as<float>() + (int64_t(row) * nh + h) * d;
        const float inv = 1.0f / states[size_t(j)].sum;
        for (int e = 0; e < d; ++e) oh[e] = states[size_t(j)].acc[e] * inv;
      }
    }
  }
}

}  // namespace dcu::cpu
